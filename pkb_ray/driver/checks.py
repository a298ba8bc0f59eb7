"""The checks a sweep makes before it writes anything: a typed config, models that can run.
Each failure is said once on stderr (`pkb: ...`), naming the key, and ends the sweep with
EXIT_BAD_INPUT."""

from __future__ import annotations

import sys

from omegaconf import DictConfig, OmegaConf

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.config.validate import ConfigError, validate
from pkb_ray.modes import mode_config_errors

EXIT_OK = 0
EXIT_INTERNAL_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130


class Refused(Exception):
    """A check failed; its message was said. Carries the exit status."""

    def __init__(self, status: int = EXIT_BAD_INPUT) -> None:
        super().__init__(status)
        self.status = status


def say(msg: str) -> None:
    """A message to the user, wrapped to the terminal's width (COLUMNS; 100 in a log)."""
    from pkb_ray.console import wrap

    print(wrap(msg), file=sys.stderr, flush=True)


def refuse(msg: str) -> Refused:
    say(msg)
    return Refused()


def typed_config(dcfg: DictConfig) -> RootConfig:
    """The composed config as RootConfig, validated, with `turns=` applied."""
    from omegaconf.errors import OmegaConfBaseException

    from pkb_ray.config.overrides import unknown_composed_keys, unknown_key_message

    unknown = unknown_composed_keys(dcfg)
    if unknown:
        raise refuse(f"pkb: {unknown_key_message(unknown[0])}")
    from pkb_ray.config.schema import AgentConfigError

    try:
        cfg: RootConfig = OmegaConf.to_object(dcfg)
    except AgentConfigError as exc:  # its message names the key as `pkb agent run` spells it
        raise refuse("pkb: " + str(exc).replace("agent.", "mode.tools.", 1))
    except OmegaConfBaseException as exc:  # e.g. a template's `???` left unset
        full_key = str(getattr(exc, "full_key", "") or "KEY")
        raise refuse(f"pkb: {exc}".splitlines()[0] + f" (set it on the command line: {full_key}=...)")
    try:
        validate(cfg, more=mode_config_errors(cfg))
    except (ConfigError, ValueError, KeyError) as exc:
        raise refuse(f"pkb: {exc}")
    if cfg.turns is not None:
        cfg.mode.turns = cfg.turns
    return cfg


def model_names(cfg: RootConfig) -> list[str]:
    """`models=all` (a string on the command line) or `models=[a,b]`, as a list of names."""
    names = [cfg.models] if isinstance(cfg.models, str) else list(cfg.models or [])
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ConfigError(f"models={cfg.models!r}: give model names, e.g. models=all or models=[opus47,gpt55]")
    return names


def resolve_sweep_models(cfg: RootConfig) -> list[ModelConfig]:
    names = model_names(cfg)
    if not names:
        return [cfg.model]
    from pkb_ray.generation.models import resolve_models

    return resolve_models(names)


def usable_models(models: list[ModelConfig], require_keys: bool = True) -> list[ModelConfig]:
    """Models that can run: a broken config stops the sweep (nothing is spent yet); a
    missing API key skips that model, said once, naming the variable. Not `require_keys`
    (a dry run, which calls no API): every model is kept and the missing keys are counted."""
    from pkb_ray.generation.models import check_model_config, missing_api_key

    bad = [f"model {m.name}: {why}" for m in models if (why := check_model_config(m))]
    if bad:
        say("pkb: " + "\n  ".join(bad))
        return []
    usable = []
    skipped: dict[str, list[str]] = {}  # key variable -> models; `models=all` skipped 54, one line each
    for model in models:
        var = missing_api_key(model)
        if var:
            skipped.setdefault(var, []).append(model.name)
        else:
            usable.append(model)
    if skipped and not require_keys:
        n = sum(len(v) for v in skipped.values())
        say(f"pkb: {n} model{'s' if n != 1 else ''} planned without an API key set here "
            f"({', '.join(sorted(skipped))}): a run now would skip them")
        return models
    if skipped:
        n = sum(len(v) for v in skipped.values())
        say(f"pkb: skipping {n} model{'s' if n != 1 else ''} without an API key: " + "; ".join(
            f"{var} unset: {', '.join(names)}" for var, names in sorted(skipped.items())))
    if not usable:
        say("pkb: no model left to run (every model lacks its API key)")
    return usable


def sweep_models(cfg: RootConfig, require_keys: bool = True) -> list[ModelConfig]:
    """The models this sweep runs (resolved, checked, those with their key unless not
    `require_keys`)."""
    try:
        models = resolve_sweep_models(cfg)
    except (ConfigError, ValueError, KeyError) as exc:
        raise refuse(f"pkb: {exc}")
    usable = usable_models(models, require_keys)
    if not usable:
        raise Refused()
    return usable
