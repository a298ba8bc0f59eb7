"""The code that runs inside one rank process (forked by launcher.py).

Order matters, because candidate code is untrusted and can patch anything it can reach:
  1. start:     process group (gloo on cpu; cuda:nccl,cpu:gloo on cuda) and a harness-owned
                gloo group for barriers and gathers.
  2. reference: load the problem; make every input this evaluation will use (trials, the
                timing sets, the timed-check set); load or compute the reference outputs
                (and timings) with the guard off, before any candidate code exists here.
  3. load:      install the guard, import the candidate from its file.
  4. trial:N:   one call per trial on fresh inputs, each rank's output checked.
  5. timing:    candidate timed by the same function as the reference; then one more
                timed call on a fresh input set whose output is checked too ("check").
A failure is reported to the parent (launcher.RankChannel) and the rank exits; the parent
kills the rest of the group.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import sys
import traceback
from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist

# Bound at import (the forkserver preloads this module): candidate code comes later.
from pkb_ray.engine import cache, correctness, guard, launch_gate, timing
from pkb_ray.config.schema import TimingConfig
from pkb_ray.records import FailureClass

_save = torch.save
_load = torch.load

TRIAL_SEED0 = 1000
TIMING_SEED0 = 5000
CHECK_SEED = 9000


class _Fail(Exception):
    def __init__(self, failure: FailureClass, message: str, trial: int | None = None,
                 max_abs_error: float | None = None, log: str = "") -> None:
        super().__init__(message)
        self.failure, self.message, self.trial = failure, message, trial
        self.max_abs_error, self.log = max_abs_error, log


def classify_exception(exc: BaseException, tb: str, during_load: bool = False) -> FailureClass:
    """Failure class of an exception raised by candidate code."""
    from pkb_ray.engine.launcher import is_cuda_error

    if isinstance(exc, guard.ForbiddenAPIError) or guard.violations():
        return FailureClass.FORBIDDEN_API
    if during_load and ("Error building extension" in tb or "ninja: build stopped" in tb):
        return FailureClass.COMPILE_ERROR
    if is_cuda_error(f"{exc}\n{tb}"):
        return FailureClass.CUDA_FAULT
    return FailureClass.RUNTIME_ERROR


def _resolve(qualname: str) -> Callable[..., Any]:
    mod, _, fn = qualname.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _clone(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(v) for v in x)
    return x


def _to_cpu(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu(v) for v in x)
    return x


def _import_candidate(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("pkb_candidate", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["pkb_candidate"] = module
    spec.loader.exec_module(module)
    return module


class _Group:
    """Harness barriers and gathers on a gloo group of its own, exempt from the guard."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.pg = dist.new_group(backend="gloo")

    def barrier(self) -> None:
        with guard.harness_section():
            dist.barrier(group=self.pg)

    def device_barrier(self, device: str) -> Callable[[], None] | None:
        """cuda: a one-element NCCL all-reduce on the default group, queued on the current
        stream, so that the ranks' streams leave it together (timing.py)."""
        if not device.startswith("cuda"):
            return None
        token = torch.zeros(1, device=device)

        def align() -> None:
            with guard.harness_section():
                dist.all_reduce(token)

        return align

    def gather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world_size
        with guard.harness_section():
            dist.all_gather_object(out, obj, group=self.pg)
        return out


def rank_entry(rank: int, world_size: int, job: dict[str, Any], chan: Any) -> None:
    """Target of launcher.launch for an evaluation."""
    device_kind = job["device"]
    timeouts = job["timeouts"]
    cuda = device_kind == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        device = f"cuda:{rank}"
    else:
        device = "cpu"
        # Ranks share the node's cores: 2 ranks on a 2-core CI machine get 1 thread each.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))

    store = dist.TCPStore("127.0.0.1", job["store_port"], world_size, False,
                          timeout=timedelta(seconds=timeouts["start_s"]))
    dist.init_process_group("cuda:nccl,cpu:gloo" if cuda else "gloo", store=store, rank=rank,
                            world_size=world_size,
                            timeout=timedelta(seconds=max(timeouts.values())))
    group = _Group(world_size)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    # ---- reference (guard off, no candidate code loaded yet)
    chan.phase("reference")
    problem = _resolve(job["loader"])(job["problems_source"], job["problem_id"])
    size, trials = job["size"], job["trials"]
    atol, rtol = problem.spec.atol, problem.spec.rtol

    def make(seed: int) -> tuple:
        return problem.make_inputs(rank, world_size, seed, size, device)

    trial_seeds = [TRIAL_SEED0 + t for t in range(trials)]
    trial_inputs = [make(s) for s in trial_seeds]
    check_inputs = make(CHECK_SEED)
    seeds_needing_refs = trial_seeds + ([CHECK_SEED] if job["time_candidate"] else [])
    inputs_by_seed = dict(zip(trial_seeds, trial_inputs))
    inputs_by_seed[CHECK_SEED] = check_inputs
    key, cache_dir = job["reference_key"], job["cache_dir"]

    refs: dict[int, Any] = {}
    for seed in seeds_needing_refs:
        path = cache.output_path(cache_dir, key, rank, seed)
        if path.exists():
            try:
                refs[seed] = _load(path, map_location=device, weights_only=True)
            except Exception:  # a corrupt entry is recomputed
                refs.pop(seed, None)
    # Every rank computes or no rank does: the reference runs collectives.
    all_hit = all(group.gather(len(refs) == len(seeds_needing_refs)))
    if not all_hit:
        for seed in seeds_needing_refs:
            out = problem.solution(*_clone(inputs_by_seed[seed]))
            sync()
            refs[seed] = _clone(out)
            buf = io.BytesIO()
            _save(_to_cpu(out), buf)
            cache.atomic_write_bytes(cache.output_path(cache_dir, key, rank, seed), buf.getvalue())
    group.barrier()

    timing_cfg = TimingConfig(**job["timing"])
    l2 = 0
    if cuda:
        from pkb_ray.engine.hardware import l2_bytes
        l2 = l2_bytes(rank)
    ref_timing = None
    align = group.device_barrier(device) if timing_cfg.align_streams else None
    gate = _launch_gate(job, rank, world_size, timing_cfg) if cuda else None
    if cuda and job["time_candidate"] and not all(group.gather(gate is not None)):
        # Every rank gated or none: a gated rank and an ungated one make different calls.
        if gate is not None:
            sys.stderr.write("launch gate unavailable on another rank, timing ungated\n")
        gate = None
    if job["time_candidate"]:
        tpath = cache.timing_path(cache_dir, key, timing_cfg)
        ref_timing = cache.read_json(tpath)
        if ref_timing is not None and ref_timing.get("gate_available") != (gate is not None):
            ref_timing = None  # timed where the gate was (or was not) available: time it again
        if not all(group.gather(ref_timing is not None)):
            sets = timing.input_sets_for_cold_l2(lambda k: make(TIMING_SEED0 + 100 + k),
                                                 make(TIMING_SEED0 + 100), l2)
            stats, _ = timing.time_calls(problem.solution, sets, timing_cfg, device=device,
                                         barrier=group.barrier, gather=group.gather,
                                         device_barrier=align, gate=gate)
            ref_timing = _stats_dict(stats)
            ref_timing["gate_available"] = gate is not None
            if rank == 0:
                cache.write_json(tpath, ref_timing)
            del sets
        # Candidate timing sets, made now so candidate code cannot touch their generation.
        cand_sets = timing.input_sets_for_cold_l2(lambda k: make(TIMING_SEED0 + k),
                                                  make(TIMING_SEED0), l2)
    del problem  # the candidate gets nothing of the reference module through us
    group.barrier()

    # ---- candidate
    chan.phase("load")
    if job["guard"]:
        guard.install()
    try:
        module = _import_candidate(job["candidate_path"])
        solution = getattr(module, "solution", None)
        if not callable(solution):
            raise _Fail(FailureClass.RUNTIME_ERROR, "the candidate defines no callable `solution`")
        sync()
        if guard.violations():
            raise guard.ForbiddenAPIError(guard.violations()[0])
    except _Fail as f:
        chan.fail(f.failure, f.message)
        return
    except BaseException as e:  # noqa: BLE001 - candidate code
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        chan.fail(classify_exception(e, tb, during_load=True),
                  f"loading the candidate: {type(e).__name__}: {_first_line(e)}", log=tb)
        return
    chan.phase("wait:load")
    group.barrier()

    worst = 0.0
    for t in range(trials):
        chan.phase(f"trial:{t}")
        group.barrier()
        out = _candidate_call(chan, solution, trial_inputs[t], sync, trial=t)
        if out is _FAILED:
            return
        chan.phase(f"wait:trial:{t}")
        v = correctness.compare(out[0], refs[trial_seeds[t]], atol, rtol)
        if not v.ok:
            chan.fail(v.failure, f"rank {rank}, trial {t}: {v.message}", trial=t,
                      max_abs_error=v.max_abs_error)
            return
        worst = max(worst, v.max_abs_error or 0.0)
        del out
        trial_inputs[t] = None  # free as we go

    cand_timing = None
    if job["time_candidate"]:
        chan.phase("timing")
        try:
            stats, caller = timing.time_calls(solution, cand_sets, timing_cfg, device=device,
                                              barrier=group.barrier, gather=group.gather,
                                              device_barrier=align,
                                              gate=gate if job.get("gate_candidate", True) else None)
            if guard.violations():
                raise guard.ForbiddenAPIError(guard.violations()[0])
        except BaseException as e:  # noqa: BLE001
            tb = traceback.format_exc()
            sys.stderr.write(tb)
            chan.fail(classify_exception(e, tb), f"while timing: {type(e).__name__}: {_first_line(e)}", log=tb)
            return
        cand_timing = _stats_dict(stats)
        del cand_sets
        # One more call, timed exactly like the others, on inputs whose reference we know:
        # a candidate that skips work once it is being timed fails here.
        chan.phase(f"check:{trials}")
        try:
            out, _ = caller.call(solution, check_inputs)
            sync()
        except BaseException as e:  # noqa: BLE001
            tb = traceback.format_exc()
            sys.stderr.write(tb)
            chan.fail(classify_exception(e, tb), f"timed call: {type(e).__name__}: {_first_line(e)}",
                      trial=trials, log=tb)
            return
        v = correctness.compare(out, refs[CHECK_SEED], atol, rtol)
        if not v.ok:
            chan.fail(v.failure, f"rank {rank}, output of a timed call: {v.message}", trial=trials,
                      max_abs_error=v.max_abs_error)
            return
        worst = max(worst, v.max_abs_error or 0.0)
    chan.phase("wait:done")
    group.barrier()
    chan.result({"max_abs_error": worst, "candidate_timing": cand_timing,
                 "reference_timing": ref_timing, "violations": guard.violations()})


_FAILED = object()


def _candidate_call(chan: Any, solution: Callable[..., Any], inputs: tuple, sync: Callable[[], None],
                    trial: int) -> Any:
    try:
        out = solution(*inputs)
        sync()  # surface asynchronous CUDA errors in this trial, not later
        if guard.violations():
            raise guard.ForbiddenAPIError(guard.violations()[0])
        return (out,)
    except BaseException as e:  # noqa: BLE001 - candidate code
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        chan.fail(classify_exception(e, tb), f"trial {trial}: {type(e).__name__}: {_first_line(e)}",
                  trial=trial, log=tb)
        return _FAILED


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else "")[:400]


def _stats_dict(stats: timing.TimingStats) -> dict[str, Any]:
    return {"median_ms": stats.median_ms, "calls": stats.calls, "warmup_calls": stats.warmup_calls,
            "rel_ci": stats.rel_ci if stats.rel_ci != float("inf") else None,
            "stopped": stats.stopped, "input_sets": stats.input_sets,
            "host_overhead_ms": stats.host_overhead_ms, "clock": stats.clock,
            "event_median_ms": stats.event_median_ms, "host_median_ms": stats.host_median_ms,
            "gated": stats.gated}


def _launch_gate(job: dict[str, Any], rank: int, world_size: int, cfg: TimingConfig) -> Any:
    """This rank's side of the launch gate, or None (the reason goes to the log): timing
    then runs ungated."""
    if not (cfg.gate and job.get("time_candidate") and job.get("gate_path")):
        return None
    try:
        return launch_gate.LaunchGate(job["gate_path"], rank, world_size, rank,
                                      int(cfg.gate_timeout_ms * 1000))
    except Exception as e:  # noqa: BLE001 - any failure here means: time without the gate
        sys.stderr.write(f"launch gate unavailable, timing ungated: {e}\n")
        return None


def profile_entry(rank: int, world_size: int, job: dict[str, Any], chan: Any) -> None:
    """Target of launcher.launch for measuring the hardware profile (one process, all GPUs)."""
    from dataclasses import asdict

    from pkb_ray.engine.hardware import measure_profile

    chan.phase("profile")
    chan.result(asdict(measure_profile(job["fingerprint"])))
