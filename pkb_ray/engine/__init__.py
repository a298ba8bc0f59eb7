"""Evaluation engine: one candidate, fresh rank processes, honest correctness and timing.

    from pkb_ray.engine import EvalRequest, evaluate
    result = evaluate(EvalRequest(problem_id="allreduce", problems_source="builtin",
                                  candidate_source=src, world_size=2, device="cpu", size="small"))

On a Ray cluster: `start_node_evaluators(...)` returns NodeEvaluator actors (one per GPU
node, holding all its GPUs) whose `evaluate.remote(request)` does the same.
Nothing here touches CUDA at import time; Ray is imported only for the actor names.
"""

from __future__ import annotations

from typing import Any

from pkb_ray.engine.evaluate import evaluate
from pkb_ray.engine.prebuild import BuildResult, prebuild
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION

__all__ = [
    "HARNESS_VERSION",
    "BuildResult",
    "EvalRequest",
    "NodeEvaluator",
    "evaluate",
    "gpu_nodes_in_cluster",
    "prebuild",
    "start_node_evaluators",
]

_RAY_NAMES = {"NodeEvaluator", "start_node_evaluators", "gpu_nodes_in_cluster"}


def __getattr__(name: str) -> Any:
    # Ray costs ~1 s to import; `pkb eval` and the rank processes never need it.
    if name in _RAY_NAMES:
        from pkb_ray.engine import node_evaluator

        return getattr(node_evaluator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
