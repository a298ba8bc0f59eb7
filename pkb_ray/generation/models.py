"""Model configs: `conf/model/<name>.yaml` merged into the typed `ModelConfig`.

`models=all` means every config whose candidate source calls an API (sources.py): not
`reference` or `expert`, which need none, and not templates whose `model_id` or `api_base`
must come from the command line (`openai_compatible`).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Iterable

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, ValidationError

from pkb_ray.config.schema import ModelConfig
from pkb_ray.config.store import CONF_DIR

from .sources import UnknownSourceError, source_for

MODEL_CONF_DIR = CONF_DIR / "model"
ALL = "all"


class ModelConfigError(ValueError):
    """A model config that cannot be loaded; the message names the file and the key."""


def list_model_names(conf_dir: Path = MODEL_CONF_DIR) -> list[str]:
    """Every `conf/model/*.yaml` stem, sorted (pseudo-models and templates included)."""
    return sorted(p.stem for p in Path(conf_dir).glob("*.yaml"))


def _merge(path: Path, overrides: Iterable[str] = ()) -> DictConfig:
    schema = OmegaConf.structured(ModelConfig)
    try:
        merged = OmegaConf.merge(schema, OmegaConf.load(path))
        if overrides:
            merged = OmegaConf.merge(merged, OmegaConf.from_dotlist(list(overrides)))
    except (ConfigKeyError, ValidationError) as e:
        # OmegaConf's message names the key ("Key 'rpmm' not in 'ModelConfig'"); add the file.
        raise ModelConfigError(f"{path}: {e.msg if hasattr(e, 'msg') else e}") from None
    if merged.name != path.stem:
        raise ModelConfigError(f"{path}: name {merged.name!r} must equal the file stem {path.stem!r}")
    return merged


def load_model_config(
    name: str, overrides: Iterable[str] = (), conf_dir: Path = MODEL_CONF_DIR
) -> ModelConfig:
    """`conf/model/<name>.yaml` as a ModelConfig. `overrides` are dotlist entries such as
    `model_id=qwen3` or `api_base=http://127.0.0.1:8000/v1` (no `model.` prefix).

    Unknown keys and wrongly typed values fail naming the file and the key; so does a
    template value left unset (`???`)."""
    path = Path(conf_dir) / f"{name}.yaml"
    if not path.exists():
        raise ModelConfigError(_unknown_message([name], list_model_names(conf_dir), conf_dir))
    merged = _merge(path, overrides)
    # OmegaConf's merge keeps the schema default where the YAML says `???`, so find the
    # template's required keys in the YAML itself and check the overrides gave them.
    given = {o.split("=", 1)[0].strip() for o in overrides}
    unset = [k for k in _template_keys(path) if k not in given]
    if unset:
        raise ModelConfigError(
            f"{path}: {', '.join(unset)} not set; pass "
            + " ".join(f"model.{k}=..." for k in unset) + " on the command line"
        )
    try:
        cfg: ModelConfig = OmegaConf.to_object(merged)  # type: ignore[assignment]
        source_for(cfg)
    except MissingMandatoryValue as e:
        raise ModelConfigError(f"{path}: {e.full_key or e} not set") from None
    except UnknownSourceError as e:
        raise ModelConfigError(f"{path}: {e}") from None
    return cfg


def as_model_config(node: Any) -> ModelConfig:
    """A ModelConfig from what the driver holds: a ModelConfig, a DictConfig or a dict."""
    if isinstance(node, ModelConfig):
        return node
    merged = OmegaConf.merge(OmegaConf.structured(ModelConfig), node)
    return OmegaConf.to_object(merged)  # type: ignore[return-value]


def model_summary(name: str, conf_dir: Path = MODEL_CONF_DIR) -> dict[str, Any]:
    """A config as plain data without failing on template values (`???` stays `???`)."""
    path = Path(conf_dir) / f"{name}.yaml"
    out = OmegaConf.to_container(_merge(path), resolve=False)
    out.update({k: "???" for k in _template_keys(path)})
    return out  # type: ignore[return-value]


def sampling_params(cfg: ModelConfig) -> dict[str, Any]:
    """The parameters that change a model's answer: part of every kernels_cache key and of
    every cell's identity."""
    return {"temperature": cfg.temperature, "reasoning_effort": cfg.reasoning_effort,
            "max_output_tokens": cfg.max_output_tokens,
            "extra_params": dict(cfg.extra_params or {})}


def is_pseudo(cfg: ModelConfig) -> bool:
    """True for a model that calls no API (its source serves the candidate)."""
    return not source_for(cfg).calls_api


def _template_keys(path: Path) -> list[str]:
    """Keys the YAML leaves as `???`: they must come from the command line."""
    raw = OmegaConf.load(path)
    return [str(k) for k in raw if OmegaConf.is_missing(raw, k)]


def _is_template(name: str, conf_dir: Path) -> bool:
    return bool(_template_keys(Path(conf_dir) / f"{name}.yaml"))


def api_model_names(conf_dir: Path = MODEL_CONF_DIR) -> list[str]:
    """The names `models=all` expands to: real API models only."""
    out = []
    for name in list_model_names(conf_dir):
        if _is_template(name, conf_dir):
            continue
        if not source_for(load_model_config(name, conf_dir=conf_dir)).calls_api:
            continue
        out.append(name)
    return out


def resolve_models(names: list[str], conf_dir: Path = MODEL_CONF_DIR) -> list[ModelConfig]:
    """Model names (or `["all"]`) as ModelConfigs, in the given order, without duplicates.

    `all` may be combined with explicit names (`[all, expert]` adds the pseudo-model).
    Unknown names fail together, each with its closest matches."""
    known = list_model_names(conf_dir)
    wanted: list[str] = []
    for n in names:
        for m in api_model_names(conf_dir) if n == ALL else [n]:
            if m not in wanted:
                wanted.append(m)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ModelConfigError(_unknown_message(unknown, known, conf_dir))
    return [load_model_config(n, conf_dir=conf_dir) for n in wanted]


def _unknown_message(unknown: list[str], known: list[str], conf_dir: Path) -> str:
    parts = []
    for n in unknown:
        close = difflib.get_close_matches(n, known, n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        parts.append(f"{n!r}{hint}")
    return (f"unknown model {'; '.join(parts)}: no such file in {conf_dir}; "
            f"`pkb models list` shows the {len(known)} known models")


def missing_api_key(cfg: ModelConfig) -> str | None:
    """The environment variable this model needs when it is unset or empty, else None.

    None for sources that call no API and endpoints without a key (api_key_env unset).
    Reads only whether the variable is set; the key's value is never returned or logged."""
    if not source_for(cfg).needs_api_key or not cfg.api_key_env:
        return None
    return None if os.environ.get(cfg.api_key_env) else cfg.api_key_env


def check_model_config(cfg: ModelConfig) -> str | None:
    """Why this config cannot make a call, or None. Hydra's merge turns a template's `???`
    into the schema default (`""` / None), so a missing command-line value shows up here."""
    try:
        source = source_for(cfg)
    except UnknownSourceError as e:
        return f"model {cfg.name!r}: {e}"
    if not source.calls_api:
        return None
    unset = []
    if not cfg.model_id:
        unset.append("model.model_id")
    if source.needs_api_base and not cfg.api_base:
        unset.append("model.api_base")
    if unset:
        return f"model {cfg.name!r}: {', '.join(unset)} not set; pass " + " ".join(
            f"{k}=..." for k in unset) + " on the command line"
    return None
