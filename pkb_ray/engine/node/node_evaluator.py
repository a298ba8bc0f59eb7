"""NodeEvaluator: the Ray actor that owns a whole GPU node (or one CPU slot) and evaluates
candidates in fresh rank processes, one per GPU group at a time.

One actor per GPU breaks symmetric memory (each process sees its GPU as cuda:0 and
rendezvous fails with "detected allocations from overlapping devices"; docs/design.md), so on
GPU clusters there is one actor per node, in a placement group whose single bundle holds
all that node's GPUs (STRICT_PACK, pinned to the node). The actor lends each evaluation a
group of `world_size` of them (engine/node/gpu_groups.py, by the measured topology) and runs as
many evaluations at once as there are groups: 4 at world size 2 on an 8-GPU node; one in
exclusive mode. Ray runs its methods in threads for that (max_concurrency).

The actor never runs candidate code and never initialises CUDA itself: it owns its groups'
judges (node/judge_node.py, kept across candidates in its JudgeNodes) and starts a fresh
sandbox of workers for each candidate, with CUDA_VISIBLE_DEVICES set to the group's GPUs; a candidate that crashes,
hangs or corrupts its GPU context dies with its workers. If the actor process itself dies
(node trouble), Ray restarts it (max_restarts) and the driver requeues every evaluation it
had in flight.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable

import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from pkb_ray.engine import hardware, launch
from pkb_ray.engine.build import BuildResult
from pkb_ray.engine.env import scrub_secrets
from pkb_ray.engine.launch import close_run_root, exit_on_sigterm
from pkb_ray.engine.node import gpu_groups, shared_nodes
from pkb_ray.engine.node.evaluation import DEFAULT_LOADER, JudgeNodes, conclude, evaluate, measure, node_profile
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION
from pkb_ray.records import EvalResult

MAX_RESTARTS = 4
ADMIN_THREADS = 4
"""Threads beyond the groups' for the calls a busy node must still answer (the driver's
ping after a lost evaluation, info, close)."""
ADMIN = "admin"
"""Their Ray concurrency group: max_concurrency is one pool, which evaluations waiting for a
group fill once more are handed than it holds (a shared actor's ninth sweep at world size 1)."""
RAY_OPTIONS = {"max_restarts": MAX_RESTARTS, "max_task_retries": 0, "concurrency_groups": {ADMIN: ADMIN_THREADS}}
"""The actor class's options, for subclasses too (scripts/bench_cluster.py): Ray refuses a
method of a group its class does not declare."""


class _NodeEvaluator:
    """Evaluates EvalRequests on this node, one per GPU group at a time."""

    def __init__(self, device: str = "cpu", load_problem: str = DEFAULT_LOADER, exclusive: bool = False,
                 whole_node: bool = True) -> None:
        """whole_node: False where this actor holds a share of its node's GPUs
        (cluster.node_gpus); its results then record co_tenancy None."""
        exit_on_sigterm()  # Ray stops an actor with SIGTERM: its sandboxes go with it
        # Secrets of the driver's environment reach Ray workers; drop them before anything
        # (the forkserver and ranks get an allow-listed environment anyway).
        self.scrubbed = scrub_secrets()
        self.device = device
        self.load_problem = load_problem
        # Ray's GPU ids are the node's indices (nvidia-smi's, the topology's). On a CPU node
        # given Ray's fake GPU resources they are slots: groups form the same way, and the
        # ranks run on CPU.
        ids = [str(i) for i in ray.get_gpu_ids()]
        self.node_gpus: tuple[int, ...] | None = None
        """Every GPU of the node by its index (None: those this process sees)."""
        if device == "cuda":
            self.node_gpus = launch.visible_gpus(",".join(ids) if ids else None)
        gpus = [int(i) for i in ids] if ids and all(i.isdigit() for i in ids) else []
        topology = gpu_groups.measure(gpus) if device == "cuda" else gpu_groups.uniform(gpus)
        self.groups = gpu_groups.GpuGroups(gpus, topology, exclusive=exclusive, whole_node=whole_node)
        self.judges = JudgeNodes()
        """Each group's judges, kept across candidates (one node per group and settings)."""
        self._fingerprint = hardware.fingerprint(device, self.node_gpus)

    @ray.method(concurrency_group=ADMIN)
    def slots(self, world_size: int) -> int:
        """How many evaluations of `world_size` this node runs at once (the driver hands it
        that many)."""
        return self.groups.slots(world_size)

    def evaluate(self, request: EvalRequest, build: BuildResult | None = None) -> EvalResult:
        """Evaluate one candidate on a group of this node's GPUs (waiting for one); `build`
        (optional) is its prebuild result from a CPU worker."""
        with self.groups.lend(request.eval.world_size) as lease:
            found = measure(request, self.load_problem, build=build, lease=lease, nodes=self.judges)
        return conclude(found, lease.recorded_co_tenancy)  # the lease has ended: its co-tenancy is final

    def run_tool(self, world_size: int, tool: Callable[..., Any], *args: Any) -> Any:
        """`tool(evaluate, gpus, *args)` run on a group of `world_size` of
        this node's GPUs: a caller's tool (the tool agent's calls) evaluates through the
        group like any candidate and runs on its GPUs. The caller hands its tool in; the
        engine names no tool."""
        with self.groups.lend(world_size) as lease:
            def evaluate_here(req: EvalRequest, b: BuildResult | None) -> EvalResult:
                return evaluate(req, self.load_problem, build=b, lease=lease, nodes=self.judges)

            return tool(evaluate_here, lease.gpus or None, *args)

    @ray.method(concurrency_group=ADMIN)
    def close(self) -> None:
        """Stop the judges and every sandbox, and remove this node's run root (the sweep
        calls it at its end; Ray then ends the actor without its exit handlers)."""
        self.judges.close()
        close_run_root()

    @ray.method(concurrency_group=ADMIN)
    def fingerprint(self) -> str:
        return self._fingerprint

    def hardware_profile(self, cache_dir: str) -> hardware.HardwareProfile | None:
        """This node's measured profile (cached under cache_dir/hardware; measured in a fresh
        rank process when absent, so this actor stays CUDA-free); None on cpu."""
        return node_profile(self.device, cache_dir, self.node_gpus)

    @ray.method(concurrency_group=ADMIN)
    def info(self) -> dict[str, Any]:
        gpus = ",".join(map(str, self.node_gpus)) if self.node_gpus is not None else None
        return {"device": self.device, "cuda_visible_devices": gpus,
                "gpus": list(self.groups.gpus), "exclusive": self.groups.exclusive,
                "whole_node": self.groups.whole_node,
                "topology": self.groups.topology.source,
                "fingerprint": self._fingerprint, "harness_version": HARNESS_VERSION, "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(), "scrubbed": self.scrubbed}


NodeEvaluator = ray.remote(**RAY_OPTIONS)(_NodeEvaluator)
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
                          ready_timeout_s: float = 600.0, exclusive: bool = False,
                          evaluator_class: Any = None, node_gpus: int | None = None,
                          share: bool = False) -> list[Any]:
    """Start evaluator actors and wait until they are up.

    placement "gpu_node": one actor per alive node with >= world_size GPUs, each in its own
      placement group with ONE bundle of all that node's GPUs (STRICT_PACK, pinned to the
      node by its node:<ip> resource); the actor holds num_gpus = that count and lends them
      in groups of world_size (one group at a time when `exclusive`). Ray books the bundle's
      GPUs, so a second caller (another sweep on the same cluster) waits for them, up to
      ready_timeout_s, rather than sharing them.
    node_gpus: gpu_node only: hold that many of each node's GPUs (None: all), so that two
      sweeps can share a node; Ray gives the bundles disjoint GPUs (the actor's
      ray.get_gpu_ids()), and a node with fewer than node_gpus is held whole.
    share: gpu_node only: each node's one shared actor (engine/node/shared_nodes.py: named,
      detached, holding the whole node), started by the first sweep that asks; every sweep
      with `share` evaluates on it, its groups going to whichever sweep's work is ready.
      Whoever owns the cluster closes it (shared_nodes.close_shared_evaluators), not a sweep.
      Raises SharedNodeMismatch (other settings) or SharedNodeUnavailable (not up within
      ready_timeout_s), leaving no actor of its own behind.
    placement "cpu": `cpu_evaluators` actors with num_cpus=1 (each runs world_size ranks).
    placement "auto": gpu_node for device cuda, else cpu.
    evaluator_class: the actor class (default NodeEvaluator; scripts/bench_cluster.py passes
      one that simulates evaluations)."""
    cls = evaluator_class or NodeEvaluator
    if placement == "auto":
        placement = "gpu_node" if device == "cuda" else "cpu"
    actors = []
    if placement == "cpu":
        for _ in range(max(1, cpu_evaluators)):
            actors.append(cls.options(num_cpus=1, num_gpus=0, max_concurrency=1 + ADMIN_THREADS)
                          .remote(device, load_problem, exclusive))
    elif placement == "gpu_node":
        nodes = [n for n in gpu_nodes_in_cluster() if n["gpus"] >= world_size]
        if not nodes:
            raise RuntimeError(f"no alive node has >= {world_size} GPUs "
                               f"(GPU nodes: {gpu_nodes_in_cluster()})")
        if share:
            return shared_nodes.start_all(cls, nodes, device, load_problem, exclusive, ADMIN_THREADS,
                                          HARNESS_VERSION, ready_timeout_s)
        for n in nodes:
            held = min(n["gpus"], node_gpus) if node_gpus else n["gpus"]
            part = {"whole_node": False} if held < n["gpus"] else {}  # default kwargs for other classes
            bundle = {"GPU": float(held), "CPU": 1.0}
            if n["address"]:
                bundle[f"node:{n['address']}"] = 0.001
            # Named for `ray list placement-groups`; unique, since one driver may hold two shares.
            pg = placement_group([bundle], strategy="STRICT_PACK",
                                 name=f"pkb-node-{n['node_id'][:8]}-{uuid.uuid4().hex[:6]}")
            ray.get(pg.ready(), timeout=ready_timeout_s)
            actors.append(cls.options(
                num_cpus=1, num_gpus=held, max_concurrency=held + ADMIN_THREADS,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=pg, placement_group_bundle_index=0,
                    placement_group_capture_child_tasks=False),
            ).remote(device, load_problem, exclusive, **part))
    else:
        raise ValueError(f"placement must be auto, gpu_node or cpu, got {placement!r}")
    ray.get([a.fingerprint.remote() for a in actors], timeout=ready_timeout_s)
    return actors
