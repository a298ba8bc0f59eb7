"""From the judges' samples to the figures of record and their evidence (node side; no CUDA).

A figure is the judge's window less the floor, per call: the same formula for both halves.
A worker's own clock only ever colours the evidence (`worker_clock_disagrees`); it never
enters a figure, so a worker that lies about its time gains nothing.
"""

from __future__ import annotations

import statistics
from typing import Any

from pkb_ray.engine.node import paces
from pkb_ray.engine.protocol.timing import LEAST_SHARE, TimingSamples, rel_ci_of_median
from pkb_ray.records import TimingEvidence


DISAGREE = 0.5
"""The candidate worker's own clock below this fraction of what the reference worker's
own clock says of itself (both against the judge's figure) flags the evaluation."""


def figures(s: TimingSamples) -> tuple[list[float], list[float]]:
    """(reference, candidate) ms per call of every sample."""
    k = max(1, s.calls_per_sample)
    least = LEAST_SHARE * s.floor_ms

    def per_call(windows: list) -> list[float]:
        return [max(float(w) - s.floor_ms, least, 1e-9) / k for w in windows]

    return per_call(s.reference_window_ms), per_call(s.candidate_window_ms)


def report_ratio(reports: list, figures_ms: list[float], k: int) -> float | None:
    """Median over samples of the worker's own time over the judge's figure."""
    ratios = [float(r) / (f * k) for r, f in zip(reports, figures_ms) if f > 0]
    return statistics.median(ratios) if ratios else None


def evidence(s: TimingSamples) -> tuple[TimingEvidence, list[float], list[float]]:
    ref, cand = figures(s)
    k = max(1, s.calls_per_sample)
    ev = TimingEvidence(
        instrument="judge_window", samples=len(cand), calls_per_sample=k, gated=s.gated, stopped=s.stopped,
        floor_ms=s.floor_ms, floor_curve_ms=[list(map(float, p)) for p in s.floor_curve_ms],
        reference_rel_ci=_finite(rel_ci_of_median(ref)),
        candidate_rel_ci=_finite(rel_ci_of_median(cand)),
        candidate_report_ratio=report_ratio(s.candidate_report_ms, cand, k),
        reference_report_ratio=report_ratio(s.reference_report_ms, ref, k),
        unmeasurable=s.unmeasurable, before_open_ms=s.before_open_ms, impossible=list(s.impossible),
        mode_source=s.mode_source, reference_expired=s.reference_expired, candidate_expired=s.candidate_expired,
        unmeasurable_kind=s.unmeasurable_kind, problem_calls_per_sample=s.problem_calls_per_sample,
        windows_ms=[[_short(x) for x in row] for row in zip(s.reference_window_ms, s.candidate_window_ms,
                                                             s.reference_report_ms, s.candidate_report_ms)],
        empty_windows_ms=[_short(e) for e in s.empty_window_ms],
        sample_at_s=[round(float(t), 4) for t in s.sample_at_s],
        context_pace_us=[[_short(r), _short(c)] for r, c in s.context_pace_us])
    c = s.conditions
    if c is not None:
        ev.cpu_pressure, ev.steal, ev.foreign_cpu = c.cpu_pressure, c.steal, c.foreign
    return ev, ref, cand


def clock_disagrees(ev: TimingEvidence) -> bool:
    """The candidate worker claims far less time than the judge saw it spend, by the
    measure of an honest worker on the same path (the reference worker's own ratio)."""
    if ev.candidate_report_ratio is None:
        return False
    honest = ev.reference_report_ratio if ev.reference_report_ratio else 1.0
    return ev.candidate_report_ratio < DISAGREE * min(honest, 1.0)


def paces_differ(ev: TimingEvidence) -> bool:
    """The reference's and the candidate's workers drew different GPU paces on some rank
    (node/paces.py): a launch-bound figure then carries their ratio (on one H200 the
    allreduce expert at 1024x1024 read 0.465-0.539 as the ratio went 0.92-1.09)."""
    return any((k := paces.cost([c], [r])) is not None and k > paces.TOLERANCE for r, c in ev.context_pace_us)


def _finite(x: float) -> float | None:
    return x if x == x and x != float("inf") else None


def _short(ms: Any) -> float:
    """Five significant digits: a window's own noise is larger (the judge's clock, a wake-up),
    and a record keeps hundreds of them."""
    return float(f"{float(ms):.5g}")
