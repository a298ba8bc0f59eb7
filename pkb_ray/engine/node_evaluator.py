"""NodeEvaluator: the Ray actor that owns a whole GPU node (or one CPU slot) and evaluates
one candidate at a time in fresh rank processes.

One actor per GPU breaks symmetric memory (each process sees its GPU as cuda:0 and
rendezvous fails with "detected allocations from overlapping devices"; docs/design.md), so on
GPU clusters there is one actor per node, in a placement group whose single bundle holds
all that node's GPUs (STRICT_PACK, pinned to the node), and the actor starts one rank
process per GPU with CUDA_VISIBLE_DEVICES set to the GPUs Ray gave it.

The actor never runs candidate code and never initialises CUDA itself: it holds the node's
judges (engine/node.py, kept across candidates) and starts a fresh sandbox of workers for
each candidate; a candidate that crashes, hangs or corrupts its GPU context dies with its
workers. If the actor process itself dies (node trouble), Ray restarts it (max_restarts).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from pkb_ray.engine import hardware
from pkb_ray.engine.env import scrub_secrets
from pkb_ray.engine.evaluation import DEFAULT_LOADER, evaluate, node_profile, shutdown
from pkb_ray.engine.build import BuildResult
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.sandbox import close_run_root, exit_on_sigterm
from pkb_ray.records import EvalResult

MAX_RESTARTS = 4


class _NodeEvaluator:
    """Evaluates EvalRequests on this node. Methods run one at a time (max_concurrency=1)."""

    def __init__(self, device: str = "cpu", load_problem: str = DEFAULT_LOADER) -> None:
        exit_on_sigterm()  # Ray stops an actor with SIGTERM: its sandboxes go with it
        # Secrets of the driver's environment reach Ray workers; drop them before anything
        # (the forkserver and ranks get an allow-listed environment anyway).
        self.scrubbed = scrub_secrets()
        self.device = device
        self.load_problem = load_problem
        self.cuda_visible_devices: str | None = None
        if device == "cuda":
            ids = [str(int(i)) if str(i).isdigit() else str(i) for i in ray.get_gpu_ids()]
            self.cuda_visible_devices = ",".join(ids) if ids else os.environ.get("CUDA_VISIBLE_DEVICES")
        self._fingerprint = hardware.fingerprint(device, self.cuda_visible_devices)

    def evaluate(self, request: EvalRequest, build: BuildResult | None = None) -> EvalResult:
        """Evaluate one candidate; `build` (optional) is its prebuild result from a CPU worker."""
        return evaluate(request, self.load_problem, build=build,
                        cuda_visible_devices=self.cuda_visible_devices)

    def run_tool(self, tool: Callable[..., Any], *args: Any) -> Any:
        """`tool(evaluate, cuda_visible_devices, *args)` run on this node: a caller's tool
        (the tool agent's calls) evaluates through this node's `evaluate` like any candidate
        and runs on its GPUs. The caller hands its tool in; the engine names no tool."""

        def evaluate_here(req: EvalRequest, b: BuildResult | None) -> EvalResult:
            return evaluate(req, self.load_problem, build=b, cuda_visible_devices=self.cuda_visible_devices)

        return tool(evaluate_here, self.cuda_visible_devices, *args)

    def close(self) -> None:
        """Stop the judges and every sandbox, and remove this node's run root (the sweep
        calls it at its end; Ray then ends the actor without its exit handlers)."""
        shutdown()
        close_run_root()

    def fingerprint(self) -> str:
        return self._fingerprint

    def hardware_profile(self, cache_dir: str) -> hardware.HardwareProfile | None:
        """This node's measured profile (cached under cache_dir/hardware; measured in a fresh
        rank process when absent, so this actor stays CUDA-free); None on cpu."""
        return node_profile(self.device, cache_dir, self.cuda_visible_devices)

    def info(self) -> dict[str, Any]:
        return {"device": self.device, "cuda_visible_devices": self.cuda_visible_devices,
                "fingerprint": self._fingerprint, "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(), "scrubbed": self.scrubbed}


NodeEvaluator = ray.remote(max_restarts=MAX_RESTARTS, max_task_retries=0)(_NodeEvaluator)
"""The Ray actor class (see `start_node_evaluators` for how it is placed)."""


def gpu_nodes_in_cluster() -> list[dict[str, Any]]:
    """Alive nodes with GPUs: [{"node_id", "address", "gpus", "gpu_type"}], sorted by
    address. gpu_type is what Ray detected ("H200" from its `accelerator_type:H200`
    resource), "" where it names none."""
    nodes = []
    for n in ray.nodes():
        res = n.get("Resources", {})
        gpus = int(res.get("GPU", 0))
        if n.get("Alive") and gpus > 0:
            kind = next((k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:")), "")
            nodes.append({"node_id": n["NodeID"], "address": n.get("NodeManagerAddress", ""), "gpus": gpus,
                          "gpu_type": kind})
    return sorted(nodes, key=lambda d: (d["address"], d["node_id"]))


def start_node_evaluators(device: str, world_size: int, placement: str = "auto",
                          cpu_evaluators: int = 1, load_problem: str = DEFAULT_LOADER,
                          ready_timeout_s: float = 600.0) -> list[Any]:
    """Start evaluator actors and wait until they are up.

    placement "gpu_node": one actor per alive node with >= world_size GPUs, each in its own
      placement group with ONE bundle of all that node's GPUs (STRICT_PACK, pinned to the
      node by its node:<ip> resource); the actor holds num_gpus = that count.
    placement "cpu": `cpu_evaluators` actors with num_cpus=1 (each runs world_size ranks).
    placement "auto": gpu_node for device cuda, else cpu."""
    if placement == "auto":
        placement = "gpu_node" if device == "cuda" else "cpu"
    actors = []
    if placement == "cpu":
        for _ in range(max(1, cpu_evaluators)):
            actors.append(NodeEvaluator.options(num_cpus=1, num_gpus=0).remote(device, load_problem))
    elif placement == "gpu_node":
        nodes = [n for n in gpu_nodes_in_cluster() if n["gpus"] >= world_size]
        if not nodes:
            raise RuntimeError(f"no alive node has >= {world_size} GPUs "
                               f"(GPU nodes: {gpu_nodes_in_cluster()})")
        for n in nodes:
            bundle = {"GPU": float(n["gpus"]), "CPU": 1.0}
            if n["address"]:
                bundle[f"node:{n['address']}"] = 0.001
            pg = placement_group([bundle], strategy="STRICT_PACK", name=f"pkb-node-{n['node_id'][:8]}")
            ray.get(pg.ready(), timeout=ready_timeout_s)
            actors.append(NodeEvaluator.options(
                num_cpus=1, num_gpus=n["gpus"],
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=pg, placement_group_bundle_index=0,
                    placement_group_capture_child_tasks=False),
            ).remote(device, load_problem))
    else:
        raise ValueError(f"placement must be auto, gpu_node or cpu, got {placement!r}")
    ray.get([a.fingerprint.remote() for a in actors], timeout=ready_timeout_s)
    return actors
