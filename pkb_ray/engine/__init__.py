"""Evaluation engine: one candidate, judged by processes that never run it.

    from pkb_ray.engine import EvalRequest, evaluate
    result = evaluate(EvalRequest(problem_id="allreduce", problems_source="builtin",
                                  candidate_source=src, device="cpu", size="small"))

The engine by process: each package's modules run in one kind of process.
  node/      the node's process: evaluate(), the judges' keeper (JudgeNode), the Ray actor
             (NodeEvaluator), GPU groups, the verdict that builds the one EvalResult
  judge/     trusted: one judge process per GPU, kept across candidates; inputs from secret
             seeds, the reference, the expected outputs, the comparison, the clock
  worker/    untrusted: fresh per candidate, sandboxed; imports and runs the candidate on
             what its judge hands it; imports only protocol/ and wire/
  launch/    the node's launcher: the one way into a child process, sandboxed or trusted
  protocol/  what the processes say to each other: typed records and their one codec
  wire/      the floor judge and worker share: frames, arenas, the gate, trees, cores
Beside them, for the engine's callers: the request (request.py), the prebuild (build.py),
`pkb eval` (cli.py), the hardware profile and roofline, the static check, the environment
allow-list (env.py), cgroups and the NCCL stub. On a Ray cluster `start_node_evaluators(...)`
returns NodeEvaluator actors (one per GPU node, holding all its GPUs) whose
`evaluate.remote(request)` does what evaluate() does.

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
    "SharedNodeMismatch",
    "SharedNodeUnavailable",
    "close_shared_evaluators",
    "evaluate",
    "evaluator_lost",
    "gpu_nodes_in_cluster",
    "not_built",
    "prebuild",
    "start_node_evaluators",
]

_LAZY = {
    "evaluate": "pkb_ray.engine.node.evaluation",
    "not_built": "pkb_ray.engine.node.verdict",
    "evaluator_lost": "pkb_ray.engine.node.verdict",
    "BuildResult": "pkb_ray.engine.build",
    "prebuild": "pkb_ray.engine.build",
    "EvalRequest": "pkb_ray.engine.request",
    "NodeEvaluator": "pkb_ray.engine.node.node_evaluator",
    "start_node_evaluators": "pkb_ray.engine.node.node_evaluator",
    "close_shared_evaluators": "pkb_ray.engine.node.shared_nodes",
    "SharedNodeMismatch": "pkb_ray.engine.node.shared_nodes",
    "SharedNodeUnavailable": "pkb_ray.engine.node.shared_nodes",
    "gpu_nodes_in_cluster": "pkb_ray.engine.node.node_evaluator",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
