"""Where candidates run: resolve `eval.device=auto` against the Ray cluster's nodes.

It sits with the candidate sources (sources.py) because they decide it: whether each model's
candidates can run on CPU and whether they cost an API call. The sweep (driver/sweep.py)
and `pkb agent run` (agent/cli.py) both decide by this one rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.config.validate import ConfigError

SELF_CHECK_MODEL = "reference"
"""The model a CPU self-check evaluates (conf/model/reference.yaml)."""


@dataclass
class DeviceDecision:
    device: str
    """cuda | cpu."""
    size: str
    """bench | small."""
    placement: str
    """gpu_node | cpu."""
    gpu_nodes: int
    notice: str | None = None
    """Said once to the user when the decision differs from what they may expect."""
    models: list[str] | None = None
    """When set, replaces the models of the sweep (the CPU self-check fallback)."""
    gpu_slots: int = 0
    """Evaluations the GPU nodes run at once: one per GPU group of world_size (one per node
    when eval.exclusive)."""


def gpu_slot_count(nodes: list[dict], world_size: int, exclusive: bool) -> int:
    """Evaluations the alive nodes with >= world_size GPUs run at once (engine/node/gpu_groups.py)."""
    gpus = [int(n.get("Resources", {}).get("GPU", 0)) for n in nodes if n.get("Alive")]
    return sum(1 if exclusive else g // max(1, world_size) for g in gpus if g >= world_size)


def gpu_node_count(nodes: list[dict], world_size: int) -> int:
    """Alive Ray nodes with at least `world_size` GPUs (each becomes one evaluator)."""
    return sum(
        1 for n in nodes if n.get("Alive") and n.get("Resources", {}).get("GPU", 0) >= world_size
    )


def _as_config(model: ModelConfig | str) -> ModelConfig:
    """A model config; a name (what the driver passes today) is read from conf/model, where
    only `provider` and `devices` matter here (a template's `???` values may stay unset)."""
    if isinstance(model, ModelConfig):
        return model
    from pkb_ray.generation.models import model_summary

    s = model_summary(model)
    return ModelConfig(name=model, provider=s["provider"], devices=list(s["devices"]))


def needs_gpus(models: Sequence[ModelConfig]) -> bool:
    """True when no model can run on CPU and none calls an API (nothing is spent by
    evaluating the self-check instead): the shipped expert solutions, for one."""
    from pkb_ray.generation.sources import source_for

    sources = [(source_for(m), m) for m in models]
    return bool(sources) and all(not src.calls_api and "cpu" not in src.runs_on(m) for src, m in sources)


def runs_on_cpu_without_api(models: Sequence[ModelConfig]) -> bool:
    """True when every model's candidates run on CPU and none calls an API (the reference
    self-check): a sweep without GPUs evaluates them on CPU as asked, nothing replaced."""
    from pkb_ray.generation.sources import source_for

    sources = [(source_for(m), m) for m in models]
    return bool(sources) and all(not src.calls_api and "cpu" in src.runs_on(m) for src, m in sources)


def decide_device(cfg: RootConfig, models: Sequence[ModelConfig | str], nodes: list[dict]) -> DeviceDecision:
    """`models`: the sweep's model configs (or their names in conf/model)."""
    configs = [_as_config(m) for m in models]
    n_gpu_nodes = gpu_node_count(nodes, cfg.eval.world_size)
    device = cfg.eval.device
    notice = None
    replaced = None
    if device == "auto":
        if n_gpu_nodes:
            device = "cuda"
        elif runs_on_cpu_without_api(configs):
            # model=reference (a self-check) without GPUs: its candidates run on CPU as they are.
            device = "cpu"
            notice = (f"pkb: no Ray node with >= {cfg.eval.world_size} GPUs (eval.world_size): "
                      "evaluating on CPU (eval.device=cpu says so and silences this)")
        elif needs_gpus(configs):
            # The default sweep (model=expert) on a machine without GPUs: its candidates are
            # CUDA and cannot run here, so check the whole pipeline on CPU instead of failing.
            device, replaced = "cpu", [SELF_CHECK_MODEL]
            notice = (
                f"GPU evaluation needs GPU nodes: this Ray cluster has no node with "
                f">= {cfg.eval.world_size} GPUs (eval.world_size).\n"
                "Instead: a CPU self-check of the whole pipeline (model=reference: each "
                "problem's reference as the candidate, on gloo ranks with CPU tensors, small "
                "sizes).\nTo evaluate on GPUs: run on a GPU node, or join a Ray cluster with "
                "GPU nodes: python sweep.py cluster.address=auto (after `ray start` on each node)."
            )
        else:
            raise ConfigError(
                f"eval.device=auto found no Ray node with >= {cfg.eval.world_size} GPUs, and "
                f"{', '.join(m.name for m in configs)} write CUDA candidates that need GPUs.\n"
                "Point cluster.address at a GPU cluster, or set eval.device=cpu to evaluate "
                "on CPU anyway (CUDA candidates will then fail)."
            )
    if device == "cuda" and not n_gpu_nodes:
        raise ConfigError(
            f"eval.device=cuda but no alive Ray node has >= {cfg.eval.world_size} GPUs "
            "(eval.world_size). Join a GPU cluster with cluster.address=auto."
        )
    size = cfg.eval.size if cfg.eval.size != "auto" else ("bench" if device == "cuda" else "small")
    placement = cfg.cluster.evaluator_placement
    if placement == "auto":
        placement = "gpu_node" if device == "cuda" else "cpu"
    return DeviceDecision(device, size, placement, n_gpu_nodes, notice, replaced,
                          gpu_slot_count(nodes, cfg.eval.world_size, cfg.eval.exclusive))
