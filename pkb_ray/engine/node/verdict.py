"""From the judges' reports to one EvalResult: the cause of a failure, the times with their
interval, the protections each number stands on, and the physics floor.

The cause of a failed evaluation is what the first failing rank's judge saw (the node
stopped the sandbox right then), or, among reports that arrived within GRACE_S of it, the
one FAILURE_TABLE puts first. A worker that only ended because the node stopped it is
never the cause. A correct result faster than 0.9 x its roofline is `implausible`: a
harness bug or a hack, never a finding; it is kept with its evidence.
"""

from __future__ import annotations

import statistics

from pkb_ray.engine.protocol.control import JudgeEvent, JudgeReport
from pkb_ray.engine.protocol.timing import TimingSamples
from pkb_ray.engine.node import timing_evidence, timing_stats
from pkb_ray.engine.node.judge_node import GRACE_S, NodeOutcome
from pkb_ray.engine.protocol.rank_ends import ends_in
from pkb_ray.records import EvalResult, FailureClass, TimingEvidence

PHYSICS_FLOOR = 0.9
"""A correct time below this fraction of the roofline is implausible (measurement error
of the roofline's bandwidths is a few percent)."""
LAUNCH_BOUND_MS = 0.05
"""A reference under 50 us is mostly launch overhead: such results are flagged."""
_CUDA_WORDS = ("illegal memory access", "CUDA error", "cudaError", "device-side assert", "misaligned address",
               "unspecified launch failure", "illegal instruction")


def _fail(result: EvalResult, failure: FailureClass, message: str) -> None:
    result.correct = False
    result.failure = failure
    result.message = message


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
    # dies all at once, zygote included).
    stopped = out.stopped_at if out.stopped_at is not None else float("inf")
    ended = ends_in(out.logs.get("zygote.log", ""))
    window = [w for w in window if not (w[2].worker_gone and w[0] > stopped
                                        and w[1] not in ended)] or window[:1]
    t, rank, e = min(window, key=lambda w: (FailureClass(w[2].failure).info.priority, w[0]))
    return rank, e.failure, e.message, e.trial, e.worker_gone


def _explain_gone(out: NodeOutcome, rank: int, message: str) -> tuple[FailureClass, str]:
    """A worker that ended without a word: what the zygote saw (a signal, an exit code) and
    whether its log shows a CUDA fault. The logs are the candidate's to write: they only
    ever colour a failure, never make one."""
    end = ends_in(out.logs.get("zygote.log", "")).get(rank)
    how = end.line() if end else ""
    log = out.logs.get(f"rank{rank}.log", "")
    fc = FailureClass.CUDA_FAULT if any(w.lower() in log.lower() for w in _CUDA_WORDS) else FailureClass.RUNTIME_ERROR
    return fc, f"{message}" + (f" ({how})" if how else "")


def compose(result: EvalResult, out: NodeOutcome, *, device: str, time_candidate: bool, trials: int) -> None:
    """Fill `result` from the node's outcome (result.roofline_ms must be set already)."""
    result.log = "\n".join(f"==== {name} ====\n{text}" for name, text in out.logs.items() if text.strip())
    reports = out.reports
    result.compiled = any(r.compiled for r in reports.values())
    # Where the node-seconds went (rank 0's phases, the wait for a sandbox): for people
    # tuning the harness, not for the verdict.
    seconds = dict(reports[0].seconds) if 0 in reports else {}
    seconds["sandbox_wait"] = out.sandbox_wait_s
    seconds["node_run"] = out.wall_s
    result.evidence = {"seconds": {k: round(v, 6) for k, v in seconds.items()}}  # the probe's figures are under 1 ms
    # What a judge noted of its own workers (a gate it could not map, a worker it could not
    # stop between halves): every rank's, once.
    result.flags = list(dict.fromkeys(result.flags + [f for r in reports.values() for f in r.flags]))
    result.checked_timed_calls = min((r.checked_timed_calls for r in reports.values()), default=0)
    if out.resource_limit:  # whatever followed (a worker killed, a judge's error) came of it
        _fail(result, FailureClass.RESOURCE_LIMIT, f"the sandbox's bound was reached: {out.resource_limit}")
        return
    if out.harness_error:
        _fail(result, FailureClass.HARNESS_ERROR, f"harness error: {out.harness_error}")
        return
    if out.nccl_refused:
        # Whatever else happened: the candidate tried to build or use NCCL natively.
        names = ", ".join(sorted(set(out.nccl_refused.split())))[:200]
        _fail(result, FailureClass.FORBIDDEN_API, f"native NCCL refused in the sandbox: {names}")
        return
    cause = _cause(out)
    if cause is not None:
        rank, failure, message, trial, gone = cause
        fc = FailureClass(failure)
        if gone:
            fc, message = _explain_gone(out, rank, message)
        _fail(result, fc, message)
        result.failing_rank = rank
        result.failing_trial = trial if trial >= 0 else None
        rep = reports.get(rank)
        if rep is not None:
            result.max_abs_error = rep.max_abs_error or None
            if rep.log:
                result.log = (rep.log + "\n" + result.log)[-20000:]
        timing = next((r.timing for r in reports.values() if r.timing is not None), None)
        if fc == FailureClass.IMPLAUSIBLE and timing is not None:
            result.timing = timing_evidence.evidence(timing)[0]
        return
    result.correct = True
    result.max_abs_error = max((r.max_abs_error for r in reports.values()), default=0.0)
    timing = reports[0].timing if 0 in reports else None
    message = f"correct on {trials} trials"
    if time_candidate and timing is not None and (timing.candidate_window_ms or timing.unmeasurable):
        message += _timing(result, timing, device)
    result.message = message
    _physics_floor(result)


def _timing(result: EvalResult, samples: TimingSamples, device: str) -> str:
    """The times of record, both halves by the judge's window (timing/__init__.py); the
    workers' own clocks only as evidence. The interval is the paired bootstrap's, with no
    allowance for a bias (both halves are one instrument: the reference against itself),
    widened by the measured spread between evaluations (timing/stats.py, between_sd). The
    speedup is the median of the pairs' ratios; reference_ms and candidate_ms are each
    half's own median, so their ratio can differ from it where samples vary (the message
    says which is which). No figure where the phase could not take one in the problem's
    mode, or where the host was too loaded for one (timing/conditions.loaded)."""
    ev, ref, cand = timing_evidence.evidence(samples)
    result.timing = ev
    flags = set(result.flags) | {"interleaved"}
    if device == "cuda" and not ev.gated:
        flags.add("timed_ungated")
    if ev.unmeasurable_kind == "waits_on_host":
        flags.add("waits_on_host")
    if ev.calls_per_sample < ev.problem_calls_per_sample:
        flags.add("fewer_calls_per_sample")
    if cand:
        result.reference_ms = statistics.median(ref)
        result.candidate_ms = statistics.median(cand)
        result.judge_clock_ratio = ev.candidate_report_ratio
        if timing_evidence.clock_disagrees(ev):
            flags.add("worker_clock_disagrees")
        if device == "cuda" and result.reference_ms < LAUNCH_BOUND_MS:
            flags.add("launch_bound")
    how = f"{len(cand)} interleaved samples of {ev.calls_per_sample} call(s), {ev.stopped}"
    if samples.loaded:
        flags.add("loaded_host")
    if ev.unmeasurable:
        flags.add("unmeasurable")
        result.flags = sorted(flags)
        return (f" and {result.checked_timed_calls} secretly checked timed calls; no speedup: {ev.unmeasurable} "
                f"({how})")
    ev.between_sd = timing_stats.between_sd(device, result.world_size)
    point, lo, hi = timing_stats.speedup_interval(ref, cand, between_sd=ev.between_sd)
    result.speedup = point
    result.speedup_ci_low = lo if lo == lo else None
    result.speedup_ci_high = hi if hi == hi else None
    result.flags = sorted(flags)
    ci = (f" [{result.speedup_ci_low:.3g}, {result.speedup_ci_high:.3g}]"
          if result.speedup_ci_low is not None and result.speedup_ci_high is not None else "")
    return (f" and {result.checked_timed_calls} secretly checked timed calls; speedup {point:.3g}{ci} (the median "
            f"of the pairs' ratios, reference time over candidate time); medians {result.candidate_ms:.4g} ms vs "
            f"reference {result.reference_ms:.4g} ms ({how})")


NO_FIGURE_TO_WEIGH = ("waits_on_host", "no_gate", "loaded")
"""Unmeasurable for a reason that makes every figure of the phase unreliable (a half timed
partly before its gate opened, no gate, a loaded host): no physics floor is weighed."""


def _physics_floor(result: EvalResult) -> None:
    # Both devices: on CPU the bound is the host's (engine/roofline.py host_roofline_ms).
    if not result.correct or not result.roofline_ms or not result.candidate_ms:
        return
    if result.timing is not None and result.timing.unmeasurable_kind in NO_FIGURE_TO_WEIGH:
        return
    ms = result.candidate_ms
    if result.timing is not None and (result.device == "cpu"
                                      or result.timing.unmeasurable_kind == "too_short_reference"):
        # On CPU a call's figure less the floor is mostly noise, and can be a sliver of a
        # microsecond for honest code (CI saw an honest agent turn called implausible); on
        # cuda so is every figure of a phase whose reference was too short to time
        # (moe_combine's honest reference at world size 1 read 1.78 of its roofline,
        # 2026-11-25). Then the floor is checked against the whole time per call the judge
        # saw, which no honest run can bring below what its bytes cost. A candidate alone
        # too short to time beside a measurable reference keeps the strict check: that is
        # what work done outside the window looks like.
        ms += result.timing.floor_ms / max(1, result.timing.calls_per_sample)
    result.roofline_fraction = result.roofline_ms / ms
    if ms < PHYSICS_FLOOR * result.roofline_ms:
        result.evidence = dict(result.evidence, roofline_ms=result.roofline_ms, candidate_ms=result.candidate_ms,
                               timed_ms=ms, roofline_fraction=result.roofline_fraction)
        _fail(result, FailureClass.IMPLAUSIBLE,
              f"implausible: correct outputs at {ms:.4g} ms, below the hardware's least "
              f"possible time of {result.roofline_ms:.4g} ms (roofline fraction {result.roofline_fraction:.3g}); "
              "a harness bug or a hack, kept for a person to look at")


def reports_of(out: NodeOutcome) -> list[JudgeReport]:
    return [out.reports[r] for r in sorted(out.reports)]


__all__ = ["compose", "reports_of", "JudgeEvent"]
