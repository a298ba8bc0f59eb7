"""Where candidates run: resolve `eval.device=auto` against the Ray cluster's nodes."""

from __future__ import annotations

from dataclasses import dataclass

from pkb_ray.config.schema import RootConfig
from pkb_ray.config.validate import ConfigError

PSEUDO_SELF_CHECK = "reference"


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


def gpu_node_count(nodes: list[dict], world_size: int) -> int:
    """Alive Ray nodes with at least `world_size` GPUs (each becomes one evaluator)."""
    return sum(
        1 for n in nodes if n.get("Alive") and n.get("Resources", {}).get("GPU", 0) >= world_size
    )


def decide_device(cfg: RootConfig, models: list[str], nodes: list[dict]) -> DeviceDecision:
    n_gpu_nodes = gpu_node_count(nodes, cfg.eval.world_size)
    device = cfg.eval.device
    notice = None
    replaced = None
    if device == "auto":
        if n_gpu_nodes:
            device = "cuda"
        elif models == ["expert"]:
            # The default sweep on a machine without GPUs: the expert solutions are CUDA
            # and cannot run here, so check the whole pipeline on CPU instead of failing.
            device, replaced = "cpu", [PSEUDO_SELF_CHECK]
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
                f"{', '.join(models)} write CUDA candidates that need GPUs.\n"
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
    return DeviceDecision(device, size, placement, n_gpu_nodes, notice, replaced)
