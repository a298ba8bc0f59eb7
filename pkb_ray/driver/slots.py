"""Evaluation slots: what the pipeline hands built candidates to.

A node actor runs one evaluation per GPU group at once (engine/node/gpu_groups.py): 4 at world
size 2 on an 8-GPU node, 1 in exclusive mode. The driver holds one slot per evaluation a node
can run, so its backpressure keeps every group busy: a slot is free when its last evaluation
came back. Slots of a node share its actor; when the node is lost, each of its in-flight
evaluations comes back lost, is requeued, and its slot leaves the pool once a ping fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)  # a slot is itself: the pipeline keys its in-flight work by it
class EvalSlot:
    actor: Any
    """The node actor (engine/node/node_evaluator.py) that evaluates what this slot is handed."""
    index: int
    """Which of its node's slots this is (0-based)."""
    node: str
    """A short name of the node, for the progress display."""


def slots_of(actors: list[Any], world_size: int, labels: dict[int, str], timeout_s: float = 60.0) -> list[EvalSlot]:
    """One slot per evaluation each actor runs at once, interleaved over nodes (the first
    cells of a sweep spread over the cluster instead of filling one node first)."""
    import ray

    counts = ray.get([a.slots.remote(world_size) for a in actors], timeout=timeout_s)
    return [EvalSlot(a, i, labels.get(id(a), "evaluator"))
            for i in range(max(counts, default=0)) for a, n in zip(actors, counts) if i < n]
