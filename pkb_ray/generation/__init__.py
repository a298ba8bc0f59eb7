"""The generate stage: model configs, prompts, the litellm client, kernels_cache.

The driver uses `resolve_models`, `missing_api_key`, `check_model_config` and runs one
`GenerationService` per model as a Ray async actor; `KernelsCache` is the store it reads.
`source_for(cfg)` says where a model's candidates come from and what follows (sources.py).

Also owns where candidates run (device.py: `eval.device=auto` against the cluster's nodes,
decided by the models' candidate sources). May import records, config, problems and the
engine (its hardware profile and roofline, which the prompts state); the agent and the driver
import it.
"""

from pkb_ray.generation.kernels_cache import KernelsCache, cache_key, is_cacheable
from pkb_ray.generation.client import CallResult, ModelClient, classify_exception, parse_retry_after
from pkb_ray.generation.extract import extract_candidate
from pkb_ray.generation.models import (
    MODEL_CONF_DIR,
    ModelConfigError,
    api_model_names,
    as_model_config,
    check_model_config,
    is_pseudo,
    list_model_names,
    load_model_config,
    missing_api_key,
    resolve_models,
    sampling_params,
)
from pkb_ray.generation.prompt import (
    PROMPT_VERSION,
    EvalContext,
    Prompt,
    build_prompt,
    messages_hash,
)
from pkb_ray.generation.service import GenerationService
from pkb_ray.generation.sources import CandidateSource, register_source, source_for

__all__ = [
    "MODEL_CONF_DIR",
    "PROMPT_VERSION",
    "CallResult",
    "CandidateSource",
    "EvalContext",
    "GenerationService",
    "KernelsCache",
    "ModelClient",
    "ModelConfigError",
    "Prompt",
    "api_model_names",
    "as_model_config",
    "build_prompt",
    "cache_key",
    "check_model_config",
    "classify_exception",
    "extract_candidate",
    "is_cacheable",
    "is_pseudo",
    "list_model_names",
    "load_model_config",
    "messages_hash",
    "missing_api_key",
    "parse_retry_after",
    "register_source",
    "resolve_models",
    "sampling_params",
    "source_for",
]
