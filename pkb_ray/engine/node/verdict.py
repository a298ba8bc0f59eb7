"""From what an evaluation found to its one EvalResult: the cause of a failure, the times
with their interval, the protections each number stands on, and the physics floor. Every
field is decided here, then the record is built once.

The cause of a failed evaluation is what the first failing rank's judge saw (the node
stopped the sandbox right then), or, among reports that arrived within GRACE_S of it, the
one FAILURE_TABLE puts first. A worker that only ended because the node stopped it is
never the cause. A correct result faster than 0.9 x its roofline is `implausible`: a
harness bug or a hack, never a finding; it is kept with its evidence.
"""

from __future__ import annotations

import statistics
import traceback
from dataclasses import dataclass, field
from typing import Any

from pkb_ray.engine.build import BuildResult
from pkb_ray.engine.node import eval_limit, timing_evidence, timing_stats
from pkb_ray.engine.node.judge_node import GRACE_S, NodeOutcome
from pkb_ray.engine.protocol.rank_ends import ends_in
from pkb_ray.engine.protocol.timing import TimingSamples
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION
from pkb_ray.records import EvalResult, FailureClass

PHYSICS_FLOOR = 0.9
"""A correct time below this fraction of the roofline is implausible (measurement error
of the roofline's bandwidths is a few percent)."""
LAUNCH_BOUND_MS = 0.05
"""A reference under 50 us is mostly launch overhead: such results are flagged."""
LOG_CHARS = 20000
STORE_CHANNEL_BYTES = 64 << 10
"""Past this the ranks' store carried data, not set-up: the harness's own group writes 36
bytes there (2 ranks, CPU), a symmetric-memory rendezvous a few hundred per buffer. The
store cannot be closed (symmetric memory needs it), so its use is flagged (README, Known
limits): expected on CPU, where it is the stand-in for symmetric memory."""
_CUDA_WORDS = ("illegal memory access", "CUDA error", "cudaError", "device-side assert", "misaligned address",
               "unspecified launch failure", "illegal instruction")


@dataclass
class Findings:
    """What one evaluation found, phase by phase (node/evaluation.py fills it in), before
    any verdict. A phase that did not run leaves its fields empty."""
    request: EvalRequest
    gpus: str = ""
    gpu_link: str = ""
    sharing: str = ""
    """The lent group's GPUs, weakest link and sharing mode ("" outside a node actor)."""
    static_flags: list[str] = field(default_factory=list)
    """The static check's findings (and guard_off)."""
    refused: tuple[FailureClass, str] | None = None
    """Refused before any process started: the failure and why."""
    build: BuildResult | None = None
    """The caller's prebuild, once the static check passed."""
    hardware_fingerprint: str = ""
    roofline_ms: float | None = None
    cache_dir: str = ""
    reference_key: str = ""
    sandbox: str = ""
    """What confined the candidate, in words (until the bounds its sandbox held)."""
    outcome: NodeOutcome | None = None
    """The judges' reports and the sandbox's logs."""
    harness_error: str = ""
    """The traceback of a bug of the harness itself."""
    node_seconds: float = 0.0
    node_prepare_s: float = 0.0
    """Seconds of the node's own work before it ran the judges (static check, the problem,
    the hardware, the judges' spec)."""
    node_cpu_s: float = 0.0
    """CPU seconds the evaluating thread of the node used: the share of the evaluation that
    holds the node process's interpreter lock, which its GPU groups' threads take in turn."""


def result(found: Findings, co_tenancy: int | None = None) -> EvalResult:
    """The one EvalResult of an evaluation. `co_tenancy`: the most other evaluations on its
    node while it ran (None outside a node actor)."""
    req = found.request
    r: dict[str, Any] = dict(
        world_size=req.eval.world_size, device=req.device, size=req.size, harness_version=HARNESS_VERSION,
        trials=req.eval.trials, gpus=found.gpus, gpu_link=found.gpu_link, sharing=found.sharing,
        co_tenancy=co_tenancy, node_seconds=found.node_seconds, hardware_fingerprint=found.hardware_fingerprint,
        roofline_ms=found.roofline_ms, sandbox=found.sandbox, flags=list(found.static_flags), evidence={},
        log="", correct=False)
    if found.build is not None:  # merged here and nowhere else
        b = found.build
        r.update(compile_seconds=b.compile_seconds, build_log=b.log, flags=r["flags"] + list(b.flags))
    tb = found.harness_error
    try:
        if found.refused is not None:
            _fail(r, *found.refused)
        elif found.outcome is not None:
            _judged(r, found.outcome, req)
    except Exception:  # noqa: BLE001 - a bug of the verdict is the harness's
        tb = tb or traceback.format_exc()
    if found.outcome is not None:
        # The node's own seconds beside the judges' phases (for people tuning the harness).
        seconds = r["evidence"].setdefault("seconds", {})
        seconds.update(node_prepare=round(found.node_prepare_s, 6), node_cpu=round(found.node_cpu_s, 6))
    if tb:
        _fail(r, FailureClass.HARNESS_ERROR, f"harness error: {tb.strip().splitlines()[-1][:300]}")
        r["log"] = (r["log"] + "\n" + tb)[-LOG_CHARS:]
    r["flags"] = sorted(set(r["flags"]))
    return EvalResult(**r)


def not_built(build: BuildResult) -> EvalResult:
    """A turn whose build failed, so that nothing was evaluated (the driver records it)."""
    return EvalResult(failure=build.failure, message=build.message, build_log=build.log,
                      compile_seconds=build.compile_seconds, flags=sorted(set(build.flags)))


def evaluator_lost(message: str, log: str) -> EvalResult:
    """A candidate whose evaluator died under it too often to try again (the driver's)."""
    return EvalResult(failure=FailureClass.RUNTIME_ERROR, message=message, log=log)


def _fail(r: dict[str, Any], failure: FailureClass, message: str) -> None:
    r.update(correct=False, failure=failure, message=message)


def _judged(r: dict[str, Any], out: NodeOutcome, req: EvalRequest) -> None:
    """The judges' verdict, then what the sandbox held and did."""
    _compose(r, out, req)
    r["sandbox"] += f"; {out.bounds}" if out.bounds else ""
    r["evidence"]["sandbox_peaks"] = out.peaks
    if req.guard and out.store_bytes > STORE_CHANNEL_BYTES:
        r["flags"].append("store_channel")
    r["log"] = r["log"][-LOG_CHARS:]


def _cause(out: NodeOutcome) -> tuple[int, str, str, int, bool] | None:
    """(rank, failure, message, trial, worker_gone) of the failure that explains the evaluation."""
    events = out.events
    if not events:
        fails = [r for r in out.reports.values() if r.failure]
        if not fails:
            return None
        r = min(fails, key=lambda r: (FailureClass(r.failure).info.priority, r.rank))
        return r.rank, r.failure, r.message, r.trial, r.worker_gone
    t_first = events[0][0]
    window = [(t, rank, e) for t, rank, e in events if t <= t_first + GRACE_S]  # noqa: E501
    # A worker that vanished after the node stopped the sandbox was stopped, not the cause,
    # unless the zygote saw it end first (it writes how each rank ended; a stopped sandbox
    # dies all at once, zygote included). The zygote is the candidate's: what it saw says
    # nothing of a reference worker (a harness_error), which is always the stop's.
    stopped = out.stopped_at if out.stopped_at is not None else float("inf")
    ended = ends_in(out.logs.get("zygote.log", ""))
    window = [w for w in window if not (w[2].worker_gone and w[0] > stopped
                                        and (w[2].failure == "harness_error" or w[1] not in ended))] or window[:1]
    t, rank, e = min(window, key=lambda w: (FailureClass(w[2].failure).info.priority, w[0]))
    return rank, e.failure, e.message, e.trial, e.worker_gone


SET_UP_PHASES = ("start", "prepare", "calibrate")
"""The judge's phases before the candidate's source reaches its worker: only harness code runs."""


def _ran_out(out: NodeOutcome, req: EvalRequest) -> tuple[FailureClass, str] | None:
    """Where the evaluation's limit passed with no failure of its own reported: the class and
    message of that, else None (_cause explains it). The node then stopped the sandboxes, and
    every worker the judges saw end after it (or time out with it) was stopped: no crash of
    the candidate's, no failure of the reference worker. The candidate is charged a timeout
    only where set-up kept to its share of the limit (eval_limit.py), leaving the candidate
    its phases' time; otherwise (still in set-up, or set-up took that time from it: a host
    too slow or too loaded) a harness_error, which a re-run retries and no model is shown.
    Set-up runs no candidate code: the candidate cannot steer which."""
    if out.ran_out_s is None:
        return None
    stopped = out.stopped_at if out.stopped_at is not None else float("inf")
    of_the_stop = [(t, e) for t, _, e in out.events if t >= stopped and (e.worker_gone or e.failure == "timeout")]
    if len(of_the_stop) < len(out.events):
        return None  # a failure of its own (before the stop, or sent as it came): it explains the rest
    phases = [e.phase for _, e in of_the_stop] or [rep.phase for rep in out.reports.values() if rep.failure]
    if not phases:
        return None  # every judge finished as the limit passed: what they reported stands
    where = ", ".join(dict.fromkeys(phases))
    set_up_s = max((sum(rep.seconds.get(p, 0.0) for p in SET_UP_PHASES) for rep in out.reports.values()),
                   default=0.0)
    share_s = eval_limit.set_up_share_s(req)
    if all(p in SET_UP_PHASES for p in phases) or set_up_s > share_s:
        return (FailureClass.HARNESS_ERROR,
                f"harness error: the evaluation's {out.ran_out_s:.0f} s ran out in {where} after {set_up_s:.0f} s "
                f"of the harness's set-up (its share: {share_s:.0f} s), before the candidate had its phases' "
                "time: the host was too slow or too loaded to evaluate it")
    return FailureClass.TIMEOUT, f"the evaluation did not finish within its {out.ran_out_s:.0f} s (stopped in {where})"


def _explain_gone(out: NodeOutcome, rank: int, message: str) -> tuple[FailureClass, str]:
    """A worker that ended without a word: what the zygote saw (a signal, an exit code) and
    whether its log shows a CUDA fault. The logs are the candidate's to write: they only
    ever colour a failure, never make one."""
    end = ends_in(out.logs.get("zygote.log", "")).get(rank)
    how = end.line() if end else ""
    log = out.logs.get(f"rank{rank}.log", "")
    fc = FailureClass.CUDA_FAULT if any(w.lower() in log.lower() for w in _CUDA_WORDS) else FailureClass.RUNTIME_ERROR
    return fc, f"{message}" + (f" ({how})" if how else "")


def _compose(r: dict[str, Any], out: NodeOutcome, req: EvalRequest) -> None:
    """The judges' verdict on the candidate (r["roofline_ms"] is set already)."""
    r["log"] = "\n".join(f"==== {name} ====\n{text}" for name, text in out.logs.items() if text.strip())
    reports = out.reports
    r["compiled"] = any(rep.compiled for rep in reports.values())
    # Where the node-seconds went (rank 0's phases, the wait for a sandbox): for people
    # tuning the harness, not for the verdict.
    seconds = dict(reports[0].seconds) if 0 in reports else {}
    seconds["sandbox_wait"] = out.sandbox_wait_s
    seconds["node_handout"] = out.handout_s
    seconds["sandbox_age"] = out.sandbox_age_s
    seconds["node_run"] = out.wall_s
    r["evidence"] = {"seconds": {k: round(v, 6) for k, v in seconds.items()},  # the probe's figures are under 1 ms
                     "sandbox_taken": out.sandbox_taken, "paces_apart": out.paces_apart}
    # What a judge noted of its own workers (a gate it could not map, a worker it could not
    # stop between halves): every rank's, once.
    r["flags"] = list(dict.fromkeys(r["flags"] + [f for rep in reports.values() for f in rep.flags]))
    r["checked_timed_calls"] = min((rep.checked_timed_calls for rep in reports.values()), default=0)
    if out.resource_limit:  # whatever followed (a worker killed, a judge's error) came of it
        _fail(r, FailureClass.RESOURCE_LIMIT, f"the sandbox's bound was reached: {out.resource_limit}")
    elif out.harness_error:
        _fail(r, FailureClass.HARNESS_ERROR, f"harness error: {out.harness_error}")
    elif out.nccl_refused:
        # Whatever else happened: the candidate tried to build or use NCCL natively.
        names = ", ".join(sorted(set(out.nccl_refused.split())))[:200]
        _fail(r, FailureClass.FORBIDDEN_API, f"native NCCL refused in the sandbox: {names}")
    elif (ran_out := _ran_out(out, req)) is not None:
        _fail(r, *ran_out)
    elif (cause := _cause(out)) is not None:
        _failed(r, out, *cause)
    else:
        _correct(r, out, req)


def _failed(r: dict[str, Any], out: NodeOutcome, rank: int, failure: str, message: str, trial: int,
            gone: bool) -> None:
    fc = FailureClass(failure)
    if gone and fc != FailureClass.HARNESS_ERROR:  # the reference's worker is not the candidate's
        fc, message = _explain_gone(out, rank, message)
    _fail(r, fc, message)
    r.update(failing_rank=rank, failing_trial=trial if trial >= 0 else None)
    rep = out.reports.get(rank)
    if rep is not None:
        r["max_abs_error"] = rep.max_abs_error or None
        if rep.log:
            r["log"] = (rep.log + "\n" + r["log"])[-LOG_CHARS:]
    timing = next((rep.timing for rep in out.reports.values() if rep.timing is not None), None)
    if fc == FailureClass.IMPLAUSIBLE and timing is not None:
        r["timing"] = timing_evidence.evidence(timing)[0]


def _correct(r: dict[str, Any], out: NodeOutcome, req: EvalRequest) -> None:
    reports = out.reports
    r.update(correct=True, max_abs_error=max((rep.max_abs_error for rep in reports.values()), default=0.0))
    timing = reports[0].timing if 0 in reports else None
    message = f"correct on {req.eval.trials} trials"
    if req.eval.time_candidates and timing is not None and (timing.candidate_window_ms or timing.unmeasurable):
        message += _timing(r, timing, req.device)
    r["message"] = message
    physics_floor(r)


def _timing(r: dict[str, Any], samples: TimingSamples, device: str) -> str:
    """The times of record, both halves by the judge's window (judge/timing/__init__.py);
    the workers' own clocks only as evidence. The interval is the paired bootstrap's, with
    no allowance for a bias (both halves are one instrument: the reference against itself),
    widened by the measured spread between evaluations (timing_stats.between_sd). The
    speedup is the median of the pairs' ratios; reference_ms and candidate_ms are each
    half's own median, so their ratio can differ from it where samples vary (the message
    says which is which). No figure where the phase could not take one in the problem's
    mode, or where the host was too loaded for one (judge/timing/conditions.loaded)."""
    ev, ref, cand = timing_evidence.evidence(samples)
    r["timing"] = ev
    flags = r["flags"]
    flags += ["interleaved"] + (["timed_ungated"] if device == "cuda" and not ev.gated else [])
    if ev.unmeasurable_kind == "waits_on_host":
        flags.append("waits_on_host")
    if ev.calls_per_sample < ev.problem_calls_per_sample:
        flags.append("fewer_calls_per_sample")
    if cand:
        r.update(reference_ms=statistics.median(ref), candidate_ms=statistics.median(cand),
                 judge_clock_ratio=ev.candidate_report_ratio)
        if timing_evidence.clock_disagrees(ev):
            flags.append("worker_clock_disagrees")
        if device == "cuda" and r["reference_ms"] < LAUNCH_BOUND_MS:
            flags.append("launch_bound")
        if timing_evidence.paces_differ(ev):
            flags.append("worker_paces_differ")
    how = f"{len(cand)} interleaved samples of {ev.calls_per_sample} call(s), {ev.stopped}"
    if samples.loaded:
        flags.append("loaded_host")
    checked = f" and {r['checked_timed_calls']} secretly checked timed calls"
    if ev.unmeasurable:
        flags.append("unmeasurable")
        return f"{checked}; no speedup: {ev.unmeasurable} ({how})"
    ev.between_sd = timing_stats.between_sd(device, r["world_size"], r.get("reference_ms"), r.get("candidate_ms"))
    point, lo, hi = timing_stats.speedup_interval(ref, cand, between_sd=ev.between_sd)
    if not (lo == lo and hi == hi):
        # A figure no interval bounds is not published: too few samples to say how far the
        # next evaluation's could be from it.
        ev.unmeasurable = f"{len(cand)} sample(s): too few for an interval"
        ev.unmeasurable_kind = "too_few_samples"
        flags.append("unmeasurable")
        return f"{checked}; no speedup: {ev.unmeasurable} ({how})"
    r.update(speedup=point, speedup_ci_low=lo, speedup_ci_high=hi)
    return (f"{checked}; speedup {point:.3g} [{lo:.3g}, {hi:.3g}] (the median of the pairs' ratios, reference time over candidate "
            f"time); medians {r['candidate_ms']:.4g} ms vs reference {r['reference_ms']:.4g} ms ({how})")


NO_FIGURE_TO_WEIGH = ("waits_on_host", "no_gate", "loaded")
"""Unmeasurable for a reason that makes every figure of the phase unreliable (a half timed
partly before its gate opened, no gate, a loaded host): no physics floor is weighed."""


def physics_floor(r: dict[str, Any]) -> None:
    """A correct result (the fields of one, as result() gathers them) faster than the
    hardware allows becomes `implausible`, its evidence kept. Both devices: on CPU the
    bound is the host's (engine/roofline.py host_roofline_ms)."""
    timing, roofline_ms, ms = r.get("timing"), r.get("roofline_ms"), r.get("candidate_ms")
    if not r.get("correct") or not roofline_ms or not ms:
        return
    if timing is not None and timing.unmeasurable_kind in NO_FIGURE_TO_WEIGH:
        return
    if timing is not None and (r.get("device") == "cpu" or timing.unmeasurable_kind == "too_short_reference"):
        # On CPU a call's figure less the floor is mostly noise, and can be a sliver of a
        # microsecond for honest code (an honest agent turn was called implausible so); on
        # cuda so is every figure of a phase whose reference was too short to time
        # (moe_combine's honest reference at world size 1 read 1.78 of its roofline). Then
        # the floor is checked against the whole time per call the judge saw, which no
        # honest run can bring below what its bytes cost. A candidate alone too short to
        # time beside a measurable reference keeps the strict check: that is what work done
        # outside the window looks like.
        ms += timing.floor_ms / max(1, timing.calls_per_sample)
    fraction = r["roofline_fraction"] = roofline_ms / ms
    if ms < PHYSICS_FLOOR * roofline_ms:
        r["evidence"] = dict(r.get("evidence") or {}, roofline_ms=roofline_ms, candidate_ms=r["candidate_ms"],
                             timed_ms=ms, roofline_fraction=fraction)
        _fail(r, FailureClass.IMPLAUSIBLE,
              f"implausible: correct outputs at {ms:.4g} ms, below the hardware's least "
              f"possible time of {roofline_ms:.4g} ms (roofline fraction {fraction:.3g}); "
              "a harness bug or a hack, kept for a person to look at")
