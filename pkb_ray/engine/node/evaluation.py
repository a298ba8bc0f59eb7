"""evaluate(request) -> EvalResult: static check, build, judges and a sandboxed worker,
verdict.

The composition, in order (measure() finds, the verdict concludes):
  refusals   static check and the caller's prebuild: parse_error / forbidden_api /
             compile_error without starting a process
  problem    the problem, checked for the request's size and world size
  hardware   the GPUs (parsed once), the fingerprint (nvidia-smi: this process never touches
             CUDA), the cached profile (cuda), the roofline
  judges     the group's judges (kept by the caller's JudgeNodes) and a fresh sandbox
  verdict    correct / failure class / times with their interval / roofline floor: the one
             EvalResult (node/verdict.py)
Never raises: a bug of the harness itself becomes harness_error with its traceback.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import subprocess
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from pkb_ray.engine import hardware, launch, nccl_stub, roofline, static_check
from pkb_ray.engine.build import BuildResult
from pkb_ray.engine.node import cpu_pins, reference_timings, timing_modes, verdict
from pkb_ray.engine.node.eval_limit import evaluation_limit_s
from pkb_ray.engine.node.gpu_groups import Lease
from pkb_ray.engine.node.judge_node import JudgeNode, NodeSpec
from pkb_ray.engine.node.verdict import Findings
from pkb_ray.engine.protocol.control import JudgeJob
from pkb_ray.engine.protocol.timing import TimingMode
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION
from pkb_ray.records import EvalResult, FailureClass

DEFAULT_LOADER = "pkb_ray.problems:load_problem"
PROFILE_TIMEOUT_S = 300.0

_profile_lock = threading.Lock()
"""One hardware measurement at a time in this process (node_profile)."""


class JudgeNodes:
    """The judge nodes one owner keeps: one per GPU group and settings, started by the
    group's first evaluation and kept across candidates. A NodeEvaluator owns one for its
    node's groups; evaluate() without one uses LOCAL, this process's."""

    def __init__(self) -> None:
        self._nodes: dict[NodeSpec, JudgeNode] = {}
        self._lock = threading.Lock()
        self._stops_at_exit = False

    def node_for(self, spec: NodeSpec) -> JudgeNode:
        """The judges for `spec`, started once and kept. A node for other settings on GPUs
        that overlap these is stopped first (it cannot be in use: GpuGroups lends no GPU
        twice).

        The lock covers the table only: stopping a node's judges and spare sandboxes takes
        seconds (each judge may take 5 s to quit), and every group's evaluation asks here
        first, so a world-size-4 evaluation replacing two world-size-2 nodes must not hold
        up the node's other groups meanwhile."""
        with self._lock:
            node = self._nodes.get(spec)
            if node is not None:
                return node
            replaced = [self._nodes.pop(s) for s in list(self._nodes) if _overlap(spec.gpus, s.gpus)]
            if not self._stops_at_exit:
                # Judges leave their groups while the store (this process's) still lives.
                atexit.register(self.close)
                self._stops_at_exit = True
            node = self._nodes[spec] = JudgeNode(spec)
        for old in replaced:
            old.stop()
        return node

    def nodes(self) -> list[JudgeNode]:
        with self._lock:
            return list(self._nodes.values())

    def close(self) -> None:
        """Stop every judge and every sandbox started ahead."""
        with self._lock:
            for node in self._nodes.values():
                node.stop()
            self._nodes.clear()


def _overlap(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
    """Whether two nodes' judges hold a GPU in common: a node with no GPUs named holds them all."""
    return not a or not b or bool(set(a) & set(b))


LOCAL = JudgeNodes()
"""The judges of callers that own none (`pkb eval`, scripts, the agent's in-process tools,
tests): this process's, stopped at its exit."""


def shutdown() -> None:
    """Stop this process's own judges (LOCAL)."""
    LOCAL.close()


def evaluate(request: EvalRequest, load_problem: Callable[..., Any] | str = DEFAULT_LOADER, *,
             build: BuildResult | None = None, gpus: tuple[int, ...] | None = None,
             lease: Lease | None = None, nodes: JudgeNodes | None = None) -> EvalResult:
    """Evaluate one candidate; never raises.

    load_problem: `(source, problem_id) -> Problem`, a module-level function (or its
      "module:function" name) that the judges can import too.
    build: the candidate's prebuild result (its compile time, log and flags go into the
      result; a failed build ends the evaluation without starting anything).
    gpus: the GPUs of this evaluation, by the node's indices; default: this process's
      CUDA_VISIBLE_DEVICES.
    lease: the GPU group a node actor lent this evaluation (node/gpu_groups.py): its GPUs
      replace `gpus`, and the result records the GPUs, the sharing mode and the co-tenancy
      so far (a NodeEvaluator concludes after the lease ends, with the final one).
    nodes: who keeps the judges (default: LOCAL, this process's)."""
    found = measure(request, load_problem, build=build, gpus=gpus, lease=lease, nodes=nodes)
    return conclude(found, lease.recorded_co_tenancy if lease is not None else None)


def measure(request: EvalRequest, load_problem: Callable[..., Any] | str = DEFAULT_LOADER, *,
            build: BuildResult | None = None, gpus: tuple[int, ...] | None = None,
            lease: Lease | None = None, nodes: JudgeNodes | None = None) -> Findings:
    """Everything one evaluation finds, before any verdict (evaluate() says what each
    argument is); never raises."""
    t0, cpu0 = time.monotonic(), time.thread_time()
    found = Findings(request=request)
    if lease is not None:
        found.gpus, found.gpu_link, found.sharing = ",".join(map(str, lease.gpus)), lease.link, lease.sharing
        gpus = lease.gpus or None
    try:
        _measure(found, _qualname(load_problem), build, gpus, lease, nodes or LOCAL)
    except Exception:  # noqa: BLE001 - the one place where everything is caught
        found.harness_error = traceback.format_exc()
    found.node_seconds = time.monotonic() - t0
    found.node_cpu_s = time.thread_time() - cpu0
    return found


def conclude(found: Findings, co_tenancy: int | None) -> EvalResult:
    """The verdict on what was found; a correct result's reference time is kept for
    whoever wants one without timing it (reports, launch-bound checks), never read back
    into a speedup: every speedup comes from its own interleaved samples."""
    result = verdict.result(found, co_tenancy)
    if result.correct and result.reference_ms and found.reference_key:
        key = found.reference_key + ("-shared" if co_tenancy else "")  # timed beside others: kept apart
        try:
            reference_timings.write_json(
                reference_timings.timing_path(found.cache_dir, key, found.request.eval.timing),
                {"median_ms": result.reference_ms, "harness_version": HARNESS_VERSION, "written_at": time.time()})
        except OSError:
            found.harness_error = traceback.format_exc()
            return verdict.result(found, co_tenancy)
    return result


def _measure(found: Findings, loader: str, build: BuildResult | None, gpus: tuple[int, ...] | None,
             lease: Lease | None, nodes: JudgeNodes) -> None:
    """The phases up to the judges' reports, each recording what it found in `found`."""
    t_start = time.monotonic()
    req = found.request
    _check(req)
    if not _passes_refusals(found, build):
        return
    problem, source = _problem(req, loader)
    if req.device == "cuda" and gpus is None:
        gpus = launch.visible_gpus()
    if req.device == "cuda" and gpus is not None and len(gpus) < req.eval.world_size:
        raise ValueError(f"world_size {req.eval.world_size} needs {req.eval.world_size} GPUs; "
                         f"{list(gpus)} has {len(gpus)}")
    # The node's hardware, whichever group of it runs this (the node actor's fingerprint, the
    # profile the hardware probe measured for the prompts).
    node_gpus = (lease.node_gpus if lease is not None else None) or gpus
    counts = _hardware(found, problem, node_gpus)
    node = nodes.node_for(node_spec(req, gpus, node_gpus))
    found.sandbox = _describe_sandbox(node.spec, req)
    # The problem's timing mode on this node, whatever the candidate: one instrument for
    # every candidate of a problem and every evaluation of one (protocol/timing.TimingMode).
    job = JudgeJob(request=dataclasses.replace(req, problems_source=source), loader=loader,
                   reference_key=found.reference_key,
                   mode=timing_modes.load_mode(found.cache_dir, found.reference_key, req.eval.timing))
    deadline_s = evaluation_limit_s(req)
    ext_dir = build.extensions_dir or None if build is not None else None
    found.node_prepare_s = time.monotonic() - t_start
    found.outcome = node.run(job, ext_dir, start_s=req.eval.timeouts.start_s, deadline_s=deadline_s,
                             footprint_bytes=counts.hbm_bytes_per_rank if counts is not None else 0)
    _remember_mode(found.cache_dir, job, found.outcome)


def _check(req: EvalRequest) -> None:
    if req.device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, got {req.device!r}")
    if req.eval.world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {req.eval.world_size}")


def _passes_refusals(found: Findings, build: BuildResult | None) -> bool:
    """The static check and the prebuild: False (with the refusal recorded) where the
    candidate is refused before any process starts."""
    req = found.request
    report = static_check.check(req.candidate_source)
    found.static_flags = list(report.flags) + ([] if req.guard else ["guard_off"])
    found.sandbox = "not run: refused before any process started"
    if report.parse_error:
        found.refused = (FailureClass.PARSE_ERROR, report.parse_error)
    elif report.forbidden and req.guard:
        found.refused = (FailureClass.FORBIDDEN_API, "; ".join(report.forbidden))
    elif build is not None:
        found.build = build
        if not build.ok:
            found.refused = (build.failure or FailureClass.COMPILE_ERROR, build.message)
    return found.refused is None


def _problem(req: EvalRequest, loader: str) -> tuple[Any, str]:
    """The problem, with the source the judges load it from (made absolute)."""
    source = _absolute_source(req.problems_source)
    problem = _resolve(loader)(source, req.problem_id)
    if req.size not in problem.spec.sizes:
        raise ValueError(f"problem {req.problem_id!r} has no size {req.size!r} "
                         f"(sizes: {sorted(problem.spec.sizes)})")
    # an evaluation names its problem: test-only world sizes (test_world_sizes) are asked for
    refusal = problem.spec.world_size_refusal(req.eval.world_size, tests=True)
    if refusal:
        raise ValueError(refusal)
    return problem, source


def _hardware(found: Findings, problem: Any, node_gpus: tuple[int, ...] | None) -> Any:
    """The node's fingerprint, the roofline and the reference's cache key; returns the
    problem's roofline counts (None where it has none)."""
    req = found.request
    ws = req.eval.world_size
    found.hardware_fingerprint = fp = hardware.fingerprint(req.device, node_gpus)
    found.cache_dir = str(Path(req.eval.cache_dir).expanduser())
    counts = problem.roofline(ws, req.size)
    if req.device == "cuda":
        profile = node_profile(req.device, found.cache_dir, node_gpus, require_facts=False)
        dtype = str(problem.spec.sizes[req.size].get("dtype", problem.spec.dtype))
        found.roofline_ms = roofline.roofline_ms(counts, profile, ws, dtype)
    else:
        found.roofline_ms = roofline.host_roofline_ms(counts, hardware.host_copy_gbps(), os.cpu_count() or 1)
    found.reference_key = reference_timings.reference_key(problem.id, problem.spec.version, ws, req.size,
                                                          req.device, fp, HARNESS_VERSION)
    return counts


def node_spec(req: EvalRequest, gpus: tuple[int, ...] | None, node_gpus: tuple[int, ...] | None) -> NodeSpec:
    """What judges this kind of evaluation needs on these GPUs (JudgeNodes keeps one node per
    spec): the sandbox this machine allows, the caches no worker may see, the NCCL stub, and
    on cuda the cores each rank's processes take."""
    ev = req.eval
    plan = launch.plan_sandbox(ev.sandbox.mode, ev.sandbox.user, ev.sandbox.bwrap_path or None)
    cache_dirs = tuple(str(Path(d).expanduser().resolve()) for d in (ev.cache_dir,))
    # CPU workers too: on a GPU machine evaluating on cpu, libnccl is there to be loaded by
    # path (the stub refuses; no library on a CPU-only build: nothing to hide).
    stub = tuple(sorted(nccl_stub.build(ev.cache_dir).items()))
    cores, setup_cores = _cores(req, gpus, node_gpus)
    return NodeSpec(device=req.device, world_size=ev.world_size, gpus=gpus, plan=plan,
                    torch_cuda_arch_list=ev.torch_cuda_arch_list, cache_dirs=cache_dirs,
                    gate_timeout_us=int(ev.timing.gate_timeout_ms * 1000), nccl_stub=stub, cores=cores,
                    setup_cores=setup_cores)


def _cores(req: EvalRequest, gpus: tuple[int, ...] | None,
           node_gpus: tuple[int, ...] | None) -> tuple[tuple[cpu_pins.RankCores, ...], tuple[int, ...]]:
    """cuda: the cores of each rank's judge and workers (node/cpu_pins.py says why), and
    those where a worker sets up before it moves to its own; ((), ()) on cpu, where ranks
    use every core. GPUs not named: ranks 0..world_size-1 on a node of as many."""
    if req.device != "cuda":
        return (), ()
    mine = gpus if gpus else tuple(range(req.eval.world_size))
    node = node_gpus if node_gpus else mine
    cores = cpu_pins.plan(list(mine[:req.eval.world_size]), len(node))
    return cores, (cpu_pins.unpinned(node) if cores else ())


def prestart(req: EvalRequest, gpus: tuple[int, ...] | None = None, nodes: JudgeNodes | None = None,
             node_gpus: tuple[int, ...] | None = None) -> JudgeNode:
    """The judges evaluate(req) would use here, started now with the first evaluation's
    sandboxes (a node actor pays for both once, not per candidate). `node_gpus`: every GPU
    of the node when `gpus` is one group of it (a lease's node_gpus), so that the judges are
    the ones evaluate(req, lease=...) asks for (their cores depend on the whole node)."""
    if req.device == "cuda" and gpus is None:
        gpus = launch.visible_gpus()
    node = (nodes or LOCAL).node_for(node_spec(req, gpus, node_gpus or gpus))
    node.start()
    node.prewarm(req.guard)
    return node


def _qualname(fn: Callable[..., Any] | str) -> str:
    if isinstance(fn, str):
        return fn
    return f"{fn.__module__}:{fn.__qualname__}"


def _resolve(qualname: str) -> Callable[..., Any]:
    import importlib

    mod, _, fn = qualname.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _describe_sandbox(spec: NodeSpec, req: EvalRequest) -> str:
    """What confined this candidate, in words a reader can check: the sandbox kind (and what
    was missing for a stronger one), and how native NCCL was kept out."""
    text = spec.plan.description
    if req.guard:
        text += "; network: no AF_INET/AF_INET6 socket, no io_uring (seccomp)"
    if req.device == "cuda" and req.guard:
        if not spec.nccl_stub:
            text += "; nccl: not replaced (no libnccl found or no C compiler): process group and guard only"
        elif spec.plan.kind.startswith("bwrap"):
            text += "; nccl: replaced by a refusing stub"
        else:
            text += "; nccl: refusing stub preloaded (a path dlopen still reaches the real library)"
    return text


def _remember_mode(cache_dir: str, job: JudgeJob, out: Any) -> None:
    """Keep the mode the judges decided from the reference's probe (the first writer wins,
    so an evaluation beside this one that decided too keeps the same mode from then on)."""
    timing = out.reports[0].timing if 0 in out.reports else None
    if job.mode is not None or timing is None or timing.mode_source != "calibrated" or out.harness_error:
        return
    timing_modes.remember_mode(cache_dir, job.reference_key, job.request.eval.timing,
                               TimingMode(held=timing.gated, calls_per_sample=timing.calls_per_sample),
                               decided_by="the reference's probe")


def _absolute_source(source: str) -> str:
    """Judges run elsewhere: a relative directory source must not depend on cwd."""
    prefix = "pkb:" if source.startswith("pkb:") else ""
    path = source[len(prefix):]
    if source != "builtin" and path and Path(path).expanduser().exists():
        return prefix + str(Path(path).expanduser().resolve())
    return source


def node_profile(device: str, cache_dir: str, gpus: tuple[int, ...] | None,
                 require_facts: bool = True) -> hardware.HardwareProfile | None:
    """This node's hardware profile: the cached one, else measured in a fresh process (and
    cached); None on cpu. `require_facts`: a profile cached before the device facts
    (gpu_name, sm_count...) were recorded is measured again (the prompts state them; if
    that fails the old one is kept); a roofline needs only the rates, so an evaluation
    takes any cached profile rather than spend up to PROFILE_TIMEOUT_S re-measuring."""
    if device != "cuda":
        return None
    cache_dir = str(Path(cache_dir).expanduser())
    fp = hardware.fingerprint(device, gpus)
    # One measurement at a time per process: two GPU groups starting together would each
    # measure (the same fingerprint) while the other loads the node.
    with _profile_lock:
        cached = hardware.load_profile(cache_dir, fp)
        if cached is not None and (cached.complete or not require_facts):
            return cached
        return _measure_profile(fp, cache_dir, gpus) or cached


def _measure_profile(fp: str, cache_dir: str, gpus: tuple[int, ...] | None) -> hardware.HardwareProfile | None:
    """Measure the hardware profile in one fresh process that sees every GPU of the node."""
    spec = launch.SpawnSpec("pkb_ray.engine.hardware", launch.ProfileStart(fingerprint=fp),
                            launch.child_env("cuda", 1, gpus, sandboxed=False))
    try:
        p = launch.start_trusted(spec, capture=True)
        try:
            stdout, _ = p.communicate(timeout=PROFILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return None
        prof = hardware.profile_from_dict(json.loads(stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, TypeError, AttributeError):
        return None
    hardware.save_profile(cache_dir, prof)
    return prof
