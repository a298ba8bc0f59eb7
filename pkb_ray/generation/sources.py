"""Where a model's candidates come from, keyed by the model config's `provider`.

Every property that depends on the kind of model (`reference`, `expert`,
`openai_compatible`, ...) is declared here, once, by the source itself, never decided by
comparing a model's name:

- `calls_api`: it asks a model API (prompts, kernels_cache, the budget, `models=all`);
  otherwise it serves a candidate it already has (`serve`), with no request.
- `guard`: the NCCL-free guard is on while its candidates run.
- `needs_api_key`: the variable the config names in `api_key_env` must be set (a keyless
  endpoint names none).
- `needs_api_base`: the config must name an endpoint (`model.api_base`).
- `devices`: the devices its candidates can run on, whatever the config's `devices` say.
- `times_itself`: its candidates are the references (a self-check of the harness).
- `has_candidate(problem)`: whether a cell for this problem can have a candidate at all.

`source_for(cfg)` finds a model's source: a registered provider, else litellm (which knows
some 100 providers; a misspelt one fails at the first call with litellm's message).

Registration point: a new kind of candidate (a tool-using agent, say, as a provider of
its own) subclasses `CandidateSource` and calls `register_source(...)` when its
module is imported, and names that module in `PLUGINS` under its provider key;
`conf/model/<name>.yaml` then selects it with `provider: <key>`. The module is imported on
the first lookup of its provider, in whichever process looks (driver, generation actors),
and only then: a plugin's import never slows or breaks the lookup of another provider.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from omegaconf import MISSING

if TYPE_CHECKING:
    from pkb_ray.config.schema import ModelConfig
    from pkb_ray.problems.spec import Problem

PLUGINS: dict[str, str] = {}
"""Provider -> the module that registers its source when imported (e.g. `{"agent":
"pkb_ray.agent.source"}`); none ships yet."""

RETIRED: dict[str, str] = {
    "pseudo": "provider `pseudo` was split in two: use `provider: reference` (the problem's "
              "reference as the candidate) or `provider: expert` (problems/<id>/expert.py)",
}


class UnknownSourceError(ValueError):
    """A provider that names no source; the message says what to use instead."""


@dataclass(frozen=True)
class CandidateSource:
    """One kind of candidate source (see the module docstring for each property)."""

    provider: str
    calls_api: bool = True
    guard: bool = True
    needs_api_key: bool = True
    needs_api_base: bool = False
    devices: tuple[str, ...] | None = None
    """None: whatever the model config's `devices` list says."""
    what: str = "candidate"
    """What it serves, for messages: `expert solution`."""
    times_itself: bool = False
    """Its candidates are the problems' references: a sweep of it measures the harness (each
    speedup should read 1.0), not a model."""

    def has_candidate(self, problem: Problem) -> bool:
        return True

    def serve(self, problem: Problem) -> str | None:
        """The candidate's source for a source that calls no API (None: it has none)."""
        return None

    def litellm_model(self, cfg: ModelConfig) -> str:
        """The id litellm routes on. An endpoint given without a provider prefix on the id
        is reached through that provider's path in litellm."""
        prefix = f"{cfg.provider}/"
        if cfg.api_base and not cfg.model_id.startswith(prefix):
            return prefix + cfg.model_id
        return cfg.model_id

    def runs_on(self, cfg: ModelConfig) -> list[str]:
        """The devices this model's candidates can run on."""
        return [d for d in cfg.devices if self.devices is None or d in self.devices]


@dataclass(frozen=True)
class OpenAICompatibleSource(CandidateSource):
    """Any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp): `model_id` is the name the
    server knows, which may hold a slash (`Qwen/Qwen3-8B`); litellm's OpenAI path sends it."""

    def litellm_model(self, cfg: ModelConfig) -> str:
        return cfg.model_id if cfg.model_id.startswith("openai/") else f"openai/{cfg.model_id}"


@dataclass(frozen=True)
class ReferenceSource(CandidateSource):
    """The problem's own reference as the candidate: a self-check of the whole pipeline.
    The reference uses collectives by definition, so its candidates run unguarded."""

    def serve(self, problem: Problem) -> str | None:
        return problem.reference_source


@dataclass(frozen=True)
class ExpertSource(CandidateSource):
    """The hand-written expert solution shipped in problems/<id>/expert.py, where there is
    one: a problem without one is not a failure of the experts."""

    def has_candidate(self, problem: Problem) -> bool:
        return problem.expert_source is not None

    def serve(self, problem: Problem) -> str | None:
        return problem.expert_source


LITELLM = CandidateSource(provider="litellm")
"""Every provider not registered below: litellm's own (openai, anthropic, gemini, ...)."""

_REGISTRY: dict[str, CandidateSource] = {}


def register_source(source: CandidateSource, *, replace: bool = False) -> CandidateSource:
    """Make `source` the one for models with `provider: <source.provider>`."""
    if source.provider in _REGISTRY and not replace:
        raise ValueError(f"a candidate source for provider {source.provider!r} is registered "
                         f"already ({_REGISTRY[source.provider]!r})")
    _REGISTRY[source.provider] = source
    return source


register_source(OpenAICompatibleSource("openai_compatible", needs_api_base=True))
register_source(ReferenceSource("reference", calls_api=False, guard=False, needs_api_key=False,
                                what="reference", times_itself=True))
# Symmetric memory is CUDA only ("SymmetricMemory does not support device type cpu").
register_source(ExpertSource("expert", calls_api=False, needs_api_key=False, devices=("cuda",),
                             what="expert solution"))


def source_for(cfg_or_provider: ModelConfig | str) -> CandidateSource:
    """The candidate source of a model config (or of a provider name)."""
    provider = cfg_or_provider if isinstance(cfg_or_provider, str) else cfg_or_provider.provider
    if provider in RETIRED:
        raise UnknownSourceError(RETIRED[provider])
    if not provider or provider == MISSING:
        raise UnknownSourceError("no provider set: name one (`reference`, `expert`, "
                                 "`openai_compatible` or a litellm provider such as `openai`)")
    if provider not in _REGISTRY and provider in PLUGINS:
        importlib.import_module(PLUGINS[provider])
        if provider not in _REGISTRY:
            raise UnknownSourceError(f"provider {provider!r}: {PLUGINS[provider]} registered no source")
    return _REGISTRY.get(provider, LITELLM)


def registered_providers() -> list[str]:
    """Providers with a source of their own (litellm's are not listed; plugins not yet
    imported are)."""
    return sorted(set(_REGISTRY) | set(PLUGINS))
