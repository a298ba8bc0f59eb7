"""A cell's identity: everything that changes its result, as flat `key: value` strings.

Two kinds of keys:
- sweep-wide (`SWEEP_KEYS`): the device, world size, size, trials, the rest of `eval.*`,
  the problems source and the harness version. A sweep is one setting of these: an
  invocation that changes one on a sweep with recorded cells is refused, naming what
  changed (its leaderboard would otherwise show old numbers under new settings).
- per cell: the problem's version, the prompt hash (API models) or the served candidate's
  hash (pseudo-models), the model id, endpoint and sampling, agent mode's turns. A change
  plans the affected cells anew, beside the old records, which are then no longer shown.

A sweep named by default (`sweep.name` unset) is named from what it runs and a digest of
these settings (default_sweep_name), so a command with other settings gets a sweep of its
own instead of being refused by, or mixed into, another's.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter

from pkb_ray.config.flat import canonical, flatten
from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.checks import model_names
from pkb_ray.modes import mode_of
from pkb_ray.records import HARNESS_KEY, SOURCE_KEY, CellResult, identity_value


def normalized_source(source: str) -> str:
    """`builtin`, or an absolute path (`pkb:` kept): the same directory named two ways is
    one source."""
    if source == "builtin":
        return source
    prefix = "pkb:" if source.startswith("pkb:") else ""
    path = source[len(prefix):]
    return prefix + os.path.abspath(os.path.expanduser(path))


# Settings of `eval` that cannot change a result: where caches live, and where a tool is.
NOT_IDENTITY = {"eval.cache_dir", "eval.sandbox.bwrap_path"}


def sweep_settings(cfg: RootConfig, device: str, size: str, harness_version: str) -> dict[str, str]:
    """The sweep-wide part of every cell's identity: every `eval.*` setting (a field added
    to EvalConfig joins by itself) with `device` and `size` as resolved (`auto` is never
    recorded), the problems source and the harness version."""
    out = {k: v for k, v in flatten("eval", cfg.eval).items() if k not in NOT_IDENTITY}
    out.update({"eval.device": device, "eval.size": size,
                SOURCE_KEY: normalized_source(cfg.problems.source), HARNESS_KEY: harness_version})
    return out


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cell_identity(sweep: dict[str, str], model: ModelConfig, problem_version: str,
                  prompt_hash: str | None, candidate_source: str | None,
                  mode: dict[str, str] | None = None) -> dict[str, str]:
    """Everything that changes one (model, problem) cell's result.

    `prompt_hash`: the first prompt's hash, for API models. `candidate_source`: what a
    pseudo-model serves (the reference, or the expert solution, which is not part of the
    problem's version). `mode`: the mode's `identity_settings(cfg)`."""
    from pkb_ray.generation.models import sampling_params
    from pkb_ray.generation.sources import source_for

    identity = dict(sweep)
    identity["problem_version"] = problem_version
    if not source_for(model).calls_api:
        identity["candidate_sha"] = sha16(candidate_source or "")
    else:
        identity["prompt_hash"] = prompt_hash or ""
        identity["model.model_id"] = model.model_id
        identity["model.api_base"] = canonical(model.api_base)
        for key, value in sampling_params(model).items():
            identity[f"model.{key}"] = canonical(value)
    identity.update(mode or {})
    return identity


def result_settings(cfg: RootConfig) -> dict[str, str]:
    """What decides a sweep's cells and their results, from the config alone (before any
    device is resolved): the models asked for, the problems, attempts, the mode's settings
    and every `eval.*` setting a cell's identity holds. Where it runs (cluster.*), where it
    records (tracking.*, sweep.*), caches and a budget are left out: they change no result."""
    out = {k: v for k, v in flatten("eval", cfg.eval).items() if k not in NOT_IDENTITY}
    names = model_names(cfg)
    if names:
        out["models"] = canonical(names)
    else:  # one model: a template (openai_compatible) is one config for many endpoints
        out.update({"model.name": cfg.model.name, "model.model_id": cfg.model.model_id,
                    "model.api_base": canonical(cfg.model.api_base)})
    out.update({"problems.ids": canonical(list(cfg.problems.ids)),
                "problems.cpu_ids": canonical(list(cfg.problems.cpu_ids)), SOURCE_KEY: normalized_source(cfg.problems.source), "attempts": canonical(cfg.attempts),
                "mode.name": cfg.mode.name, **mode_of(cfg.mode.name).identity_settings(cfg)})
    return out


def default_sweep_name(cfg: RootConfig, models: list[str], device: str) -> str:
    """`<models>[-<mode>]-<device>-<6 hex>`: what ran, where, and a digest of the settings
    that change a cell's result (result_settings), so two commands that differ in any of
    them never share a sweep, and the same command again finds its own. `models`: those
    that run (after a fallback: the self-check's `reference`)."""
    asked = model_names(cfg)
    if "all" in asked:
        who = "all" if asked == ["all"] else "all+" + "+".join(n for n in asked if n != "all")
    else:
        who = "+".join(models) if len(models) <= 3 else f"{models[0]}+{len(models) - 1}more"
    digest = sha16(json.dumps(result_settings(cfg), sort_keys=True))[:6]
    named = mode_of(cfg.mode.name).label(who, "{base}-{mode}")
    return f"{named}-{device}-{digest}".replace("/", "_")


def settings_changes(records: list[CellResult], sweep: dict[str, str]) -> list[str]:
    """How this invocation's sweep-wide settings differ from those of recorded cells: one
    line per changed key, e.g. `eval.world_size: recorded 2 (33 cells), now 3`."""
    lines = []
    legacy = sum(1 for r in records if not r.identity)
    if legacy:
        lines.append(f"{legacy} cells were recorded before cells kept their settings "
                     "(identity); what they were made with is unknown")
    for key, now in sweep.items():
        seen = Counter(identity_value(r.identity, key) or "(unset)" for r in records if r.identity)
        other = {v: n for v, n in seen.items() if v != now}
        if other:
            was = ", ".join(f"{v} ({n} cells)" for v, n in sorted(other.items()))
            lines.append(f"{key}: recorded {was}, now {now}")
    return lines


def refusal(sweep_name: str, changes: list[str], n_records: int) -> str:
    """The message for an invocation whose settings differ from its sweep's recorded cells."""
    return (
        f"sweep {sweep_name!r} holds {n_records} cells made with other settings than this "
        f"command's:\n  " + "\n  ".join(changes) + "\n"
        "Nothing ran: those cells' results would be shown under settings they were not made "
        "with.\nTo keep both, start a new sweep beside it: add sweep.name=NEW_NAME. To start "
        "this sweep over: add sweep.fresh=true (its journal is archived, its MLflow runs "
        "soft-deleted; both restorable)."
    )
