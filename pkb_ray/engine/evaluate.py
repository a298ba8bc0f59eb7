"""evaluate(request) -> EvalResult: static check, ranks, correctness, timing, roofline.

The composition, in order:
  static_check  -> parse_error / forbidden_api without starting a process
  (prebuild)    -> the caller's BuildResult, if any: compile_error without GPU time
  fingerprint   -> hardware identity (nvidia-smi; this process never touches CUDA)
  profile       -> cached hardware profile (measured once per fingerprint, cuda only)
  launch        -> world_size fresh ranks running rank_main.rank_entry
  result        -> correct / failure class / times / speedup / roofline
Never raises: a bug of the harness itself becomes harness_error with its traceback.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from pkb_ray.engine import cache, hardware, launch_gate, launcher, rank_main, roofline, static_check
from pkb_ray.engine.env import rank_env
from pkb_ray.engine.prebuild import BuildResult, extensions_dir
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION
from pkb_ray.records import EvalResult, FailureClass

DEFAULT_LOADER = "pkb_ray.problems:load_problem"
LOG_CHARS = 20000
PROFILE_TIMEOUT_S = 300.0


def _qualname(fn: Callable[..., Any] | str) -> str:
    if isinstance(fn, str):
        return fn
    return f"{fn.__module__}:{fn.__qualname__}"


def _resolve(qualname: str) -> Callable[..., Any]:
    return rank_main._resolve(qualname)


def evaluate(request: EvalRequest, load_problem: Callable[..., Any] | str = DEFAULT_LOADER, *,
             build: BuildResult | None = None, cuda_visible_devices: str | None = None,
             keep_workdir: bool = False) -> EvalResult:
    """Evaluate one candidate; never raises.

    load_problem: `(source, problem_id) -> Problem`, a module-level function (or its
      "module:function" name) that rank processes can import too.
    build: the candidate's prebuild result (compile time and log are copied; a failed
      build ends the evaluation without starting ranks).
    cuda_visible_devices: the GPUs the ranks may use (a node actor passes Ray's ids);
      default: this process's CUDA_VISIBLE_DEVICES."""
    t0 = time.monotonic()
    result = EvalResult(world_size=request.world_size, device=request.device, size=request.size,
                        harness_version=HARNESS_VERSION, trials=request.trials)
    try:
        _evaluate(request, _qualname(load_problem), build, cuda_visible_devices, keep_workdir, result)
    except Exception:  # noqa: BLE001 - the one place where everything is caught
        result.correct = False
        result.failure = FailureClass.HARNESS_ERROR
        tb = traceback.format_exc()
        result.message = f"harness error: {tb.strip().splitlines()[-1][:300]}"
        result.log = (result.log + "\n" + tb)[-LOG_CHARS:]
    result.node_seconds = time.monotonic() - t0
    return result


def _fail(result: EvalResult, failure: FailureClass, message: str) -> None:
    result.correct = False
    result.failure = failure
    result.message = message


def _evaluate(req: EvalRequest, loader: str, build: BuildResult | None,
              cuda_visible_devices: str | None, keep_workdir: bool, result: EvalResult) -> None:
    if req.device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, got {req.device!r}")
    if req.world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {req.world_size}")

    report = static_check.check(req.candidate_source)
    result.flags = list(report.flags) + ([] if req.guard else ["guard_off"])
    if report.parse_error:
        return _fail(result, FailureClass.PARSE_ERROR, report.parse_error)
    if report.forbidden and req.guard:
        return _fail(result, FailureClass.FORBIDDEN_API, "; ".join(report.forbidden))
    if build is not None:
        result.compile_seconds = build.compile_seconds
        result.build_log = build.log
        if not build.ok:
            return _fail(result, build.failure or FailureClass.COMPILE_ERROR, build.message)

    source = _absolute_source(req.problems_source)
    problem = _resolve(loader)(source, req.problem_id)
    if req.size not in problem.spec.sizes:
        raise ValueError(f"problem {req.problem_id!r} has no size {req.size!r} "
                         f"(sizes: {sorted(problem.spec.sizes)})")
    cvd = cuda_visible_devices if cuda_visible_devices is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
    if req.device == "cuda" and cvd:
        visible = [d for d in cvd.split(",") if d.strip()]
        if len(visible) < req.world_size:
            raise ValueError(f"world_size {req.world_size} needs {req.world_size} GPUs; "
                             f"CUDA_VISIBLE_DEVICES={cvd!r} has {len(visible)}")
    fp = hardware.fingerprint(req.device, cvd)
    result.hardware_fingerprint = fp
    cache_dir = str(Path(req.cache_dir).expanduser())

    profile = None
    if req.device == "cuda":
        profile = hardware.load_profile(cache_dir, fp) or _measure_profile(fp, cache_dir, cvd)
    result.roofline_ms = roofline.roofline_ms(problem.roofline(req.world_size, req.size), profile,
                                              req.world_size, str(problem.spec.sizes[req.size].get(
                                                  "dtype", problem.spec.dtype)))

    key = cache.reference_key(problem.id, problem.spec.version, req.world_size, req.size,
                              req.device, fp, HARNESS_VERSION)
    workdir = tempfile.mkdtemp(prefix="pkb_eval_")
    import torch.distributed as dist  # the rendezvous store lives here, outside the ranks

    store = dist.TCPStore("127.0.0.1", 0, req.world_size, True, wait_for_workers=False)
    gate_page = launch_gate.create_page(workdir) if req.device == "cuda" and req.timing.gate else None
    try:
        cand_path = Path(workdir) / "candidate.py"
        cand_path.write_text(req.candidate_source)
        job = {
            "problem_id": req.problem_id, "problems_source": source, "loader": loader,
            "candidate_path": str(cand_path), "device": req.device, "size": req.size,
            "trials": req.trials, "guard": req.guard, "time_candidate": req.time_candidate,
            "timing": dataclasses.asdict(req.timing), "timeouts": dataclasses.asdict(req.timeouts),
            "cache_dir": cache_dir, "reference_key": key, "store_port": store.port,
            "gate_path": gate_page,
            # Code that makes its own streams could wait on copy-engine work from the host
            # while the gate holds only the SMs: time it ungated, host time included.
            "gate_candidate": static_check.FLAG_STREAM not in result.flags,
        }
        overrides = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store.port),
                     "TORCH_EXTENSIONS_DIR": str(extensions_dir(cache_dir, req.torch_cuda_arch_list)),
                     "TORCH_CUDA_ARCH_LIST": req.torch_cuda_arch_list}
        if req.device == "cuda":
            if cvd is not None:
                overrides["CUDA_VISIBLE_DEVICES"] = cvd
        else:
            overrides["CUDA_VISIBLE_DEVICES"] = ""
            overrides["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // req.world_size))
        envs = [rank_env(**overrides, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(req.world_size))
                for r in range(req.world_size)]
        outcome = launcher.launch(rank_main.rank_entry, req.world_size, job, envs, workdir,
                                  _phase_timeouts(req))
    finally:
        del store
        if gate_page:
            Path(gate_page).unlink(missing_ok=True)
        if not keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    result.log = outcome.log[-LOG_CHARS:]
    if not outcome.ok:
        f = outcome.failure
        assert f is not None
        _fail(result, f.failure, f.message)
        result.failing_rank = f.rank
        result.failing_trial = f.trial
        result.max_abs_error = f.max_abs_error
        # Loading got past the import: count it as compiled.
        result.compiled = any(kind == "phase" and str(data).startswith(("wait:load", "trial"))
                              for _, _, kind, data in outcome.events)
        return
    result.compiled = True
    result.correct = True
    payloads = [outcome.results[r] for r in sorted(outcome.results)]
    result.max_abs_error = max(p.get("max_abs_error") or 0.0 for p in payloads)
    cand, ref = payloads[0].get("candidate_timing"), payloads[0].get("reference_timing")
    if cand:
        result.candidate_ms = cand["median_ms"]
        if cand.get("clock") == "host" and req.device == "cuda":
            # Work the CUDA events did not see (a side stream): timed by the host clock.
            result.flags = sorted(set(result.flags) | {"timed_by_host_clock"})
        if req.device == "cuda" and req.timing.gate and not cand.get("gated"):
            # It waits on the GPU from the host (or no gate could be built): its time
            # includes launch overhead, unlike a gated one.
            result.flags = sorted(set(result.flags) | {"timed_ungated"})
    if ref:
        result.reference_ms = ref["median_ms"]
    if result.candidate_ms and result.reference_ms:
        result.speedup = result.reference_ms / result.candidate_ms
    result.roofline_fraction = roofline.roofline_fraction(result.roofline_ms, result.candidate_ms)
    timing_note = ""
    if cand:
        timing_note = (f"; {result.candidate_ms:.4g} ms ({cand['calls']} calls, {cand['stopped']}, "
                       f"+/-{100 * (cand['rel_ci'] or 0):.1f}%) vs reference {result.reference_ms:.4g} ms")
    result.message = f"correct on {req.trials} trials" + (" and a timed call" if cand else "") + timing_note


def _absolute_source(source: str) -> str:
    """Ranks run in a temp directory: a relative directory source must not depend on cwd."""
    prefix = "pkb:" if source.startswith("pkb:") else ""
    path = source[len(prefix):]
    if source != "builtin" and path and Path(path).expanduser().exists():
        return prefix + str(Path(path).expanduser().resolve())
    return source


def _phase_timeouts(req: EvalRequest) -> dict[str, float]:
    t = req.timeouts
    reference_s = t.trial_s * (req.trials + 2) + (t.timing_s if req.time_candidate else 0.0)
    return {"start": t.start_s, "reference": reference_s, "load": t.load_s, "trial": t.trial_s,
            "timing": t.timing_s, "check": t.trial_s, "done": t.trial_s}


def _measure_profile(fp: str, cache_dir: str, cvd: str | None) -> hardware.HardwareProfile | None:
    """Measure the hardware profile in one fresh process that sees every GPU of the node."""
    workdir = tempfile.mkdtemp(prefix="pkb_profile_")
    try:
        env = rank_env(**({"CUDA_VISIBLE_DEVICES": cvd} if cvd is not None else {}))
        out = launcher.launch(rank_main.profile_entry, 1, {"fingerprint": fp}, [env], workdir,
                              {"start": 60.0, "profile": PROFILE_TIMEOUT_S})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if not out.ok:
        return None
    prof = hardware.HardwareProfile(**out.results[0])
    hardware.save_profile(cache_dir, prof)
    return prof
