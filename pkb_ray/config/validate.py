"""Value checks that types cannot express, run before any work starts.

Each error names the key, the bad value and the allowed values, the way a typo in a key
already fails inside Hydra.
"""

from __future__ import annotations

import re
from typing import Sequence
from urllib.parse import urlsplit

from pkb_ray.config.schema import RootConfig

NODE_TYPE = r"([1-9][0-9]*)x(\S+)"
"""cluster.node_type: GPUs per node, `x`, the GPU's name."""

_CHOICES = {
    "eval.device": ("auto", "cuda", "cpu"),
    "eval.size": ("auto", "small", "bench"),
    "cluster.evaluator_placement": ("auto", "gpu_node", "cpu"),
    "eval.sandbox.mode": ("auto", "bwrap+uid", "bwrap", "uid", "none"),
    "eval.transport": ("auto", "cuda", "host"),
}


class ConfigError(ValueError):
    """A config value is out of range; the message names the key."""


def _get(cfg: RootConfig, dotted: str) -> object:
    obj: object = cfg
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def validate(cfg: RootConfig, more: Sequence[str] = ()) -> None:
    """Raises ConfigError naming every bad value; `more`: errors found by others (the mode's
    own checks, modes/), said in the same message."""
    errors = []
    for key, allowed in _CHOICES.items():
        value = _get(cfg, key)
        if value not in allowed:
            errors.append(f"{key}={value!r} is not one of {', '.join(allowed)}")
    for key, minimum in (
        ("attempts", 1),
        ("eval.world_size", 1),
        ("eval.trials", 1),
        ("mode.turns", 1),
        ("cluster.cpu_evaluators", 1),
        ("cluster.max_inflight_generations", 1),
        ("cluster.max_queued_builds", 1),
        ("eval.timing.min_calls", 1),
        ("eval.timing.max_batch_calls", 1),
    ):
        value = _get(cfg, key)
        if not isinstance(value, int) or value < minimum:
            errors.append(f"{key}={value!r} must be an integer >= {minimum}")
    t = cfg.eval.timing
    if t.max_calls < t.min_calls:
        errors.append(f"eval.timing.max_calls={t.max_calls!r} must be >= eval.timing.min_calls={t.min_calls!r}")
    for key, value, strict in (("gate_timeout_ms", t.gate_timeout_ms, True), ("target_rel_ci", t.target_rel_ci, True),
                               ("max_timing_s", t.max_timing_s, True), ("batch_ms", t.batch_ms, False),
                               ("cpu_batch_ms", t.cpu_batch_ms, False), ("warmup_ms", t.warmup_ms, False)):
        if value < 0 or (strict and value == 0):
            errors.append(f"eval.timing.{key}={value!r} must be {'>' if strict else '>='} 0")
    if t.gate_timeout_ms > 10_000:
        errors.append(f"eval.timing.gate_timeout_ms={t.gate_timeout_ms!r} must be <= 10000")
    if cfg.budget_usd is not None and cfg.budget_usd < 0:
        errors.append(f"budget_usd={cfg.budget_usd!r} must be >= 0")
    if cfg.sweep.name is not None and (not cfg.sweep.name or "/" in cfg.sweep.name):
        errors.append(f"sweep.name={cfg.sweep.name!r} must be a non-empty name without '/'")
    if not re.fullmatch(NODE_TYPE, cfg.cluster.node_type):
        errors.append(f"cluster.node_type={cfg.cluster.node_type!r} must be <GPUs per node>x<GPU>, e.g. 8xH100")
    if cfg.cluster.node_gpus is not None:
        if not isinstance(cfg.cluster.node_gpus, int) or cfg.cluster.node_gpus < cfg.eval.world_size:
            errors.append(f"cluster.node_gpus={cfg.cluster.node_gpus!r} must be an integer >= eval.world_size "
                          f"({cfg.eval.world_size}), or null for every GPU of a node")
        elif cfg.eval.exclusive:
            errors.append(f"cluster.node_gpus={cfg.cluster.node_gpus} with eval.exclusive=true: a share of a node "
                          "cannot promise an evaluation alone on it (leave cluster.node_gpus null)")
    if cfg.cluster.share_nodes and cfg.cluster.node_gpus is not None:
        errors.append(f"cluster.share_nodes=true with cluster.node_gpus={cfg.cluster.node_gpus}: a shared node actor "
                      "holds the whole node and lends its groups to every sweep (leave cluster.node_gpus null)")
    if cfg.cluster.share_nodes and cfg.cluster.evaluator_placement == "cpu":
        errors.append("cluster.share_nodes=true with cluster.evaluator_placement=cpu: only GPU node actors "
                      "are shared (cluster.evaluator_placement=gpu_node or auto)")
    if not isinstance(cfg.cluster.nodes, int) or cfg.cluster.nodes < 1:
        errors.append(f"cluster.nodes={cfg.cluster.nodes!r} must be an integer >= 1")
    errors += tracking_uri_errors(cfg.tracking.uri)
    errors += more
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))


def tracking_uri_errors(uri: str) -> list[str]:
    """A password inside tracking.uri would be written to the sweep's config.yaml, printed in
    every hint that names the store, and seen in `ps`: it comes from the environment instead.
    The message leaves the URI out, so as not to print the password either."""
    try:
        password = urlsplit(uri).password
    except ValueError:
        return []
    if not password:
        return []
    return ["tracking.uri holds a password: put it in the environment instead\n    (PGPASSWORD "
            "for postgresql://, MLFLOW_TRACKING_USERNAME and _PASSWORD for http(s)://)"]
