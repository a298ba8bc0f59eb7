"""What a plan should cost before anything runs: its wall time, the GPU-hours of a stated
node type, and the API spend at list prices, each figure with the assumption it rests on.

Used by `--dry-run`, which asks no cluster, key or GPU: the nodes are `cluster.node_type`
x `cluster.nodes` (8 x H100, one node, unless set), the times are the measured figures of
driver/progress.py, and the prices litellm's pinned table (or the model config's own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.config.validate import NODE_TYPE
from pkb_ray.driver.progress import CONTENTION, SECONDS_PER_CELL, _duration, estimate_s
from pkb_ray.modes import mode_of

ASSUMED_OUTPUT_TOKENS = 8000
"""Output tokens per reply the expected API cost counts: a kernel of a few hundred lines
and the reasoning before it. Not measured yet (no sweep of API models has recorded its
tokens here); the ceiling at each model's `max_output_tokens` is printed beside it."""


@dataclass(frozen=True)
class NodeType:
    """`8xH100`: GPUs per node and the GPU's name (cluster.node_type)."""

    gpus: int
    gpu: str

    @classmethod
    def parse(cls, text: str) -> NodeType:
        match = re.fullmatch(NODE_TYPE, text)
        if match is None:
            raise ValueError(f"cluster.node_type={text!r} must be <GPUs per node>x<GPU>, e.g. 8xH100")
        return cls(int(match.group(1)), match.group(2))

    def __str__(self) -> str:
        return f"{self.gpus} x {self.gpu}"


@dataclass(frozen=True)
class PlannedNodes:
    """The GPU nodes a dry run plans for."""

    node: NodeType | None
    """None: no GPU node (the plan runs on CPU)."""
    count: int = 0
    note: str = ""
    """Which nodes these are and why, for the reader."""

    def as_ray_nodes(self) -> list[dict]:
        """Shaped as `ray.nodes()` reports them, for the device decision."""
        if self.node is None:
            return []
        return [{"Alive": True, "Resources": {"GPU": float(self.node.gpus)}}] * self.count


def planned_nodes(cfg: RootConfig, local: NodeType | None = None, cpu_here: bool = False) -> PlannedNodes:
    """The nodes a dry run plans for. `eval.device=auto` without a cluster address is this
    machine (`local`: its GPUs, found when None), as a run there would be; where it has too
    few and a run here would not turn to the CPU (`cpu_here`: the self-check does), and
    anything else that may evaluate on GPUs: `cluster.nodes` x `cluster.node_type`, a dry
    run asking no cluster."""
    if cfg.eval.device == "cpu":
        return PlannedNodes(None)
    node, n = NodeType.parse(cfg.cluster.node_type), cfg.cluster.nodes
    stated = (f"planned for {n} node{'s' if n != 1 else ''} of {node} (cluster.nodes, cluster.node_type): "
              "a dry run asks no cluster, key or GPU")
    if cfg.eval.device == "auto" and not cfg.cluster.address:
        local = local_gpus() if local is None else local
        if local is not None and local.gpus >= cfg.eval.world_size:
            return PlannedNodes(local, 1, f"planned for this machine ({local}), as a run without "
                                          "cluster.address evaluates on it")
        if cpu_here:
            return PlannedNodes(None)  # the device decision says what a run here does instead
        return PlannedNodes(node, n, stated + f"; this machine has fewer than {cfg.eval.world_size} GPUs, "
                                              "so a run here would refuse (join a cluster: cluster.address=auto)")
    return PlannedNodes(node, n, stated)


def local_gpus() -> NodeType | None:
    """This machine's GPUs as CUDA sees them (None without torch's CUDA, a driver or a GPU)."""
    try:
        import torch

        n = torch.cuda.device_count()
        return NodeType(n, torch.cuda.get_device_name(0).replace(" ", "_")) if n else None
    except Exception:  # noqa: BLE001: no CUDA build, no driver: no GPU to plan for
        return None


@dataclass(frozen=True)
class GpuEstimate:
    """The GPU time of `cells` evaluations on `nodes` nodes of `node`."""

    node: NodeType
    nodes: int
    world_size: int
    exclusive: bool
    cells: int

    @property
    def slots_per_node(self) -> int:
        """Evaluations one node runs at once: one per GPU group, or one (exclusive)."""
        return 1 if self.exclusive else max(1, self.node.gpus // self.world_size)

    @property
    def shared(self) -> bool:
        return self.slots_per_node > 1

    def wall_s(self) -> float:
        return estimate_s("cuda", self.cells, self.nodes * self.slots_per_node, shared=self.shared)

    def gpu_hours_rented(self) -> float:
        """Every GPU of every node for the wall time: what renting the nodes costs."""
        return self.wall_s() * self.nodes * self.node.gpus / 3600

    def gpu_hours_evaluating(self) -> float:
        """GPU time the evaluations hold (a group's GPUs; exclusive: the whole node's)."""
        held = self.node.gpus if self.exclusive else self.world_size
        return self.cells * SECONDS_PER_CELL["cuda"] * (CONTENTION if self.shared else 1.0) * held / 3600

    def lines(self) -> list[str]:
        per = SECONDS_PER_CELL["cuda"]
        groups = ("one evaluation per node (eval.exclusive)" if self.exclusive else
                  f"{self.slots_per_node} GPU group{'s' if self.slots_per_node != 1 else ''} of "
                  f"{self.world_size} per node")
        slower = f" x {CONTENTION} (beside the node's other groups)" if self.shared else ""
        return [
            f"GPU estimate on {self.nodes} x ({self.node}): {groups}; {self.cells} evaluations x {per:g} s "
            f"(measured per cell on H200 nodes){slower}: about {_duration(self.wall_s())} of wall time, "
            f"{self.gpu_hours_rented():,.1f} GPU-hours rented ({self.nodes * self.node.gpus} GPUs), "
            f"{self.gpu_hours_evaluating():,.1f} of them evaluating; compiles run on CPUs, not counted",
        ]


@dataclass(frozen=True)
class ModelCost:
    model: str
    cells: int
    expected_usd: float | None
    """At the assumed output tokens; None: no price known (litellm and the config lack one)."""
    ceiling_usd: float | None
    """At the model's max_output_tokens per reply (tools mode: mode.tools.limits.usd per cell)."""
    source: str
    """Where the price came from: litellm, config, or none."""


def api_costs(models: Sequence[ModelConfig], cells_per_model: Mapping[str, int], prompt_tokens: float,
              cfg: RootConfig) -> list[ModelCost]:
    """Each API model's spend for its pending cells, as the sweep's mode bounds it (a reply
    per cell, a reply per turn, or an episode's dollar limit)."""
    from pkb_ray.generation.client import list_price_usd
    from pkb_ray.generation.sources import source_for

    mode = mode_of(cfg.mode.name)
    out = []
    for m in models:
        n = cells_per_model.get(m.name, 0)
        if not source_for(m).calls_api or not n:
            continue
        one, source = list_price_usd(m, int(prompt_tokens), ASSUMED_OUTPUT_TOKENS)
        most, _ = list_price_usd(m, int(prompt_tokens), m.max_output_tokens)
        expected, ceiling = mode.api_cost_usd(cfg, n, one, most)
        out.append(ModelCost(m.name, n, expected, ceiling, source))
    return out


def api_lines(costs: list[ModelCost], prompt_tokens: float, cfg: RootConfig, missing_keys: int) -> list[str]:
    """The API estimate: the total, its assumptions, and the costliest models."""
    if not costs:
        return []
    expected = sum(c.expected_usd or 0.0 for c in costs)
    ceiling = sum(c.ceiling_usd or 0.0 for c in costs)
    unpriced = [c.model for c in costs if c.expected_usd is None and c.ceiling_usd is None]
    cells = sum(c.cells for c in costs)
    mode = mode_of(cfg.mode.name)
    lines = [mode.api_estimate(cfg, expected, ceiling, cells, prompt_tokens, ASSUMED_OUTPUT_TOKENS)]
    costly = sorted((c for c in costs if c.expected_usd or c.ceiling_usd),
                    key=lambda c: -(c.expected_usd or c.ceiling_usd or 0.0))
    if len(costly) > 1:
        shown = ", ".join(f"{c.model} ${(c.expected_usd if c.expected_usd is not None else c.ceiling_usd):,.2f}"
                          for c in costly[:5])
        lines.append(f"  costliest: {shown}" + (f" (of {len(costs)} models)" if len(costs) > 5 else ""))
    if unpriced:
        lines.append(f"  no price known (not counted): {', '.join(unpriced)}")
    if missing_keys:
        lines.append(f"  {missing_keys} of {len(costs)} API models {'has' if missing_keys == 1 else 'have'} "
                     "no key set here: a run now would skip them")
    return lines
