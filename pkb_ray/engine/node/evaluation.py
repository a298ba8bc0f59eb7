"""evaluate(request) -> EvalResult: static check, build, judges and a sandboxed worker,
verdict.

The composition, in order:
  static_check  -> parse_error / forbidden_api without starting a process
  (prebuild)    -> the caller's BuildResult, if any: compile_error without GPU time
  fingerprint   -> hardware identity (nvidia-smi; this process never touches CUDA)
  profile       -> cached hardware profile (measured once per fingerprint, cuda only)
  node          -> the judges (kept per process) and a fresh sandbox for this candidate
  verdict       -> correct / failure class / times with their interval / roofline floor
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
from pkb_ray.engine.node import cpu_pins, reference_timings, timing_modes, verdict
from pkb_ray.engine.node.gpu_groups import Lease
from pkb_ray.engine.protocol.control import JudgeJob
from pkb_ray.engine.protocol.timing import TimingMode
from pkb_ray.engine.node.judge_node import JudgeNode, NodeSpec
from pkb_ray.engine.build import BuildResult
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION
from pkb_ray.records import EvalResult, FailureClass

DEFAULT_LOADER = "pkb_ray.problems:load_problem"
LOG_CHARS = 20000
PROFILE_TIMEOUT_S = 300.0

_nodes: dict[tuple, JudgeNode] = {}
_nodes_lock = threading.Lock()
_profile_lock = threading.Lock()
_stops_at_exit = False


def _qualname(fn: Callable[..., Any] | str) -> str:
    if isinstance(fn, str):
        return fn
    return f"{fn.__module__}:{fn.__qualname__}"


def _resolve(qualname: str) -> Callable[..., Any]:
    import importlib

    mod, _, fn = qualname.partition(":")
    return getattr(importlib.import_module(mod), fn)


def evaluate(request: EvalRequest, load_problem: Callable[..., Any] | str = DEFAULT_LOADER, *,
             build: BuildResult | None = None, gpus: tuple[int, ...] | None = None,
             lease: Lease | None = None) -> EvalResult:
    """Evaluate one candidate; never raises.

    load_problem: `(source, problem_id) -> Problem`, a module-level function (or its
      "module:function" name) that the judges can import too.
    build: the candidate's prebuild result (compile time and log are copied; a failed
      build ends the evaluation without starting anything).
    gpus: the GPUs of this evaluation, by the node's indices; default: this process's
      CUDA_VISIBLE_DEVICES.
    lease: the GPU group a node actor lent this evaluation (node/gpu_groups.py): its GPUs
      replace `gpus`, its judges are the group's own, and the result records
      the GPUs, the sharing mode and the co-tenancy."""
    t0 = time.monotonic()
    result = EvalResult(world_size=request.eval.world_size, device=request.device, size=request.size,
                        harness_version=HARNESS_VERSION, trials=request.eval.trials)
    if lease is not None:
        gpus = lease.gpus or None
        result.gpus = ",".join(map(str, lease.gpus))
        result.gpu_link, result.sharing = lease.link, lease.sharing
    try:
        _evaluate(request, _qualname(load_problem), build, gpus, result, lease)
    except Exception:  # noqa: BLE001 - the one place where everything is caught
        result.correct = False
        result.failure = FailureClass.HARNESS_ERROR
        tb = traceback.format_exc()
        result.message = f"harness error: {tb.strip().splitlines()[-1][:300]}"
        result.log = (result.log + "\n" + tb)[-LOG_CHARS:]
    result.node_seconds = time.monotonic() - t0
    if lease is not None:
        result.co_tenancy = lease.co_tenancy  # so far; the caller updates it as it releases the group
    return result


def _fail(result: EvalResult, failure: FailureClass, message: str) -> None:
    result.correct = False
    result.failure = failure
    result.message = message


STORE_CHANNEL_BYTES = 64 << 10
"""Past this the ranks' store carried data, not set-up: the harness's own group writes 36
bytes there (2 ranks, CPU), a symmetric-memory rendezvous a few hundred per buffer. The
store cannot be closed (symmetric memory needs it), so its use is flagged (README, Known
limits): expected on CPU, where it is the stand-in for symmetric memory."""


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
    return cores, (cpu_pins.unpinned(len(node)) if cores else ())


def node_for(req: EvalRequest, gpus: tuple[int, ...] | None, cores: tuple[cpu_pins.RankCores, ...] = (),
             setup_cores: tuple[int, ...] = ()) -> JudgeNode:
    """The judges for this kind of evaluation on these GPUs, started once and kept. Each GPU
    group has its own; a node for other settings, or for GPUs that overlap these, is stopped
    first (it cannot be in use: GpuGroups lends no GPU twice)."""
    ev = req.eval
    plan = launch.plan_sandbox(ev.sandbox.mode, ev.sandbox.user, ev.sandbox.bwrap_path or None)
    cache_dirs = tuple(str(Path(d).expanduser().resolve()) for d in (ev.cache_dir,))
    # CPU workers too: on a GPU machine evaluating on cpu, libnccl is there to be loaded by
    # path (the stub refuses; no library on a CPU-only build: nothing to hide).
    stub = tuple(sorted(nccl_stub.build(ev.cache_dir).items()))
    spec = NodeSpec(device=req.device, world_size=ev.world_size, gpus=gpus, plan=plan,
                    torch_cuda_arch_list=ev.torch_cuda_arch_list, cache_dirs=cache_dirs,
                    gate_timeout_us=int(ev.timing.gate_timeout_ms * 1000), nccl_stub=stub, cores=cores,
                    setup_cores=setup_cores)
    with _nodes_lock:
        key = dataclasses.astuple(spec)
        node = _nodes.get(key)
        if node is None:
            for other_key, other in list(_nodes.items()):
                if _overlap(gpus, other.spec.gpus):
                    other.stop()
                    del _nodes[other_key]
            global _stops_at_exit
            if not _stops_at_exit:
                # Judges leave their groups while the store (this process's) still lives.
                atexit.register(shutdown)
                _stops_at_exit = True
            node = _nodes[key] = JudgeNode(spec)
    return node


def _overlap(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
    """Whether two nodes' judges hold a GPU in common: a node with no GPUs named holds them all."""
    return not a or not b or bool(set(a) & set(b))


def shutdown() -> None:
    with _nodes_lock:
        for node in _nodes.values():
            node.stop()
        _nodes.clear()


def _evaluate(req: EvalRequest, loader: str, build: BuildResult | None, gpus: tuple[int, ...] | None,
              result: EvalResult, lease: Lease | None) -> None:
    if req.device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, got {req.device!r}")
    if req.eval.world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {req.eval.world_size}")
    report = static_check.check(req.candidate_source)
    result.flags = list(report.flags) + ([] if req.guard else ["guard_off"])
    result.sandbox = "not run: refused before any process started"
    if report.parse_error:
        return _fail(result, FailureClass.PARSE_ERROR, report.parse_error)
    if report.forbidden and req.guard:
        return _fail(result, FailureClass.FORBIDDEN_API, "; ".join(report.forbidden))
    ext_dir = None
    if build is not None:
        result.compile_seconds = build.compile_seconds
        result.build_log = build.log
        if not build.ok:
            return _fail(result, build.failure or FailureClass.COMPILE_ERROR, build.message)
        ext_dir = build.extensions_dir or None

    source = _absolute_source(req.problems_source)
    problem = _resolve(loader)(source, req.problem_id)
    if req.size not in problem.spec.sizes:
        raise ValueError(f"problem {req.problem_id!r} has no size {req.size!r} "
                         f"(sizes: {sorted(problem.spec.sizes)})")
    # an evaluation names its problem: test-only world sizes (test_world_sizes) are asked for
    refusal = problem.spec.world_size_refusal(req.eval.world_size, tests=True)
    if refusal:
        raise ValueError(refusal)
    if req.device == "cuda" and gpus is None:
        gpus = launch.visible_gpus()
    if req.device == "cuda" and gpus is not None and len(gpus) < req.eval.world_size:
        raise ValueError(f"world_size {req.eval.world_size} needs {req.eval.world_size} GPUs; "
                         f"{list(gpus)} has {len(gpus)}")
    # The node's hardware, whichever group of it runs this (the node actor's fingerprint, the
    # profile the hardware probe measured for the prompts).
    node_gpus = (lease.node_gpus if lease is not None else None) or gpus
    fp = hardware.fingerprint(req.device, node_gpus)
    result.hardware_fingerprint = fp
    cache_dir = str(Path(req.eval.cache_dir).expanduser())
    profile = node_profile(req.device, cache_dir, node_gpus, require_facts=False)
    dtype = str(problem.spec.sizes[req.size].get("dtype", problem.spec.dtype))
    counts = problem.roofline(req.eval.world_size, req.size)
    if req.device == "cuda":
        result.roofline_ms = roofline.roofline_ms(counts, profile, req.eval.world_size, dtype)
    else:
        result.roofline_ms = roofline.host_roofline_ms(counts, hardware.host_copy_gbps(), os.cpu_count() or 1)

    node = node_for(req, gpus, *_cores(req, gpus, node_gpus))
    result.sandbox = _describe_sandbox(node.spec, req)
    ref_key = reference_timings.reference_key(problem.id, problem.spec.version, req.eval.world_size, req.size,
                                              req.device, fp, HARNESS_VERSION)
    # The problem's timing mode on this node, whatever the candidate: one instrument for
    # every candidate of a problem and every evaluation of one (judge/control.TimingMode).
    job = JudgeJob(request=dataclasses.replace(req, problems_source=source), loader=loader, reference_key=ref_key,
                   mode=timing_modes.load_mode(cache_dir, ref_key, req.eval.timing))
    t = req.eval.timeouts
    deadline_s = t.start_s + t.load_s + t.trial_s * (req.eval.trials + 2) + (t.timing_s if req.eval.time_candidates else 0) + 60
    out = node.run(job, ext_dir, start_s=t.start_s, deadline_s=deadline_s,
                   footprint_bytes=counts.hbm_bytes_per_rank if counts is not None else 0)
    _remember_mode(cache_dir, job, out)
    verdict.compose(result, out, device=req.device, time_candidate=req.eval.time_candidates, trials=req.eval.trials)
    result.sandbox += f"; {out.bounds}" if out.bounds else ""
    result.evidence["sandbox_peaks"] = out.peaks
    if req.guard and out.store_bytes > STORE_CHANNEL_BYTES:
        result.flags.append("store_channel")
    result.log = result.log[-LOG_CHARS:]
    if result.correct and result.reference_ms:
        key = job.reference_key
        if lease is not None and lease.co_tenancy:  # timed beside other evaluations: kept apart
            key = f"{key}-shared"
        _remember_reference_time(cache_dir, key, req, result)


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


def _remember_reference_time(cache_dir: str, key: str, req: EvalRequest, result: EvalResult) -> None:
    """The reference's median from this (interleaved) evaluation, for whoever wants a
    reference time without timing it (reports, launch-bound checks). Never read back into
    a speedup: every speedup comes from its own interleaved samples."""
    reference_timings.write_json(reference_timings.timing_path(cache_dir, key, req.eval.timing),
                     {"median_ms": result.reference_ms, "harness_version": HARNESS_VERSION,
                      "written_at": time.time()})


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
