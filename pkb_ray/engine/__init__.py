"""Evaluation engine: one candidate, judged by processes that never run it.

    from pkb_ray.engine import EvalRequest, evaluate
    result = evaluate(EvalRequest(problem_id="allreduce", problems_source="builtin",
                                  candidate_source=src, world_size=2, device="cpu", size="small"))

The trust boundary, by package:
  judge/   trusted: one judge per GPU, kept across candidates; inputs from secret seeds,
           the reference, the expected outputs, the comparison, the clock, the verdict
  worker/  untrusted: fresh per candidate, sandboxed (launch/); imports and runs the
           candidate on what its judge hands it; imports nothing of judge/
  wire/    what crosses between them: typed JSON frames, arenas of shared memory, the gate
node.py runs the judges and the sandboxes, each started through launch/ (the one way into
a child process: a typed start record and child_env's environment); verdict.py turns the
judges' reports into one EvalResult. On a Ray cluster: `start_node_evaluators(...)`
returns NodeEvaluator actors (one per GPU node, holding all its GPUs) whose
`evaluate.remote(request)` does the same.

Nothing here touches CUDA at import time, and nothing is imported until asked for: a
worker imports pkb_ray.engine.worker (and so this package) inside the sandbox, where the
driver's libraries (Hydra, Ray, MLflow) are neither needed nor always visible.

May import records, config and problems (the loader, roofline counts, includes). It names
no caller: the driver, the agent and generation import it, and the tool agent hands
`NodeEvaluator.run_tool` the tool to run (docs/design.md, Layers).
"""

from __future__ import annotations

import importlib
from typing import Any

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

_LAZY = {
    "evaluate": "pkb_ray.engine.node.evaluation",
    "BuildResult": "pkb_ray.engine.build",
    "prebuild": "pkb_ray.engine.build",
    "EvalRequest": "pkb_ray.engine.request",
    "NodeEvaluator": "pkb_ray.engine.node.node_evaluator",
    "start_node_evaluators": "pkb_ray.engine.node.node_evaluator",
    "gpu_nodes_in_cluster": "pkb_ray.engine.node.node_evaluator",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
