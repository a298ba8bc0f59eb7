"""The speedup's interval: a paired bootstrap, widened by the spread between evaluations.

Pure functions of numbers, run by the node on the judges' samples (a median's own confidence,
which the judges read too, is protocol/timing.py's rel_ci_of_median).
"""

from __future__ import annotations

import math
from typing import Sequence


BETWEEN_EVALUATIONS_SD = {"cpu": 0.048, "cuda": 0.010}
BETWEEN_EVALUATIONS_SD_CUDA_WS = {1: 0.010, 2: 0.012, 4: 0.010}
"""cuda by world size, where measured (scripts/between_evaluations.py over every reference
timed against itself, the run's widening undone): at world size 2 on 4 x H200, 0.010 held
1.0 in 96% of 101 intervals and 0.012 in 97%; at world size 4, 0.008 in 98% of 102
(benchmarks/results/timing_v3_4xh200). Fitted on those runs, not yet held out on another.
World sizes not in it take CUDA_MULTI_RANK_SD."""
CUDA_MULTI_RANK_SD = 0.015
"""Until measured at a world size: ranks on several GPUs add their own per-process draws
(each rank's worker is fresh), so the spread at world size 1 is a floor, not an estimate."""


LAUNCH_SD_US = {"cuda": 0.25}
"""A part of the spread between evaluations that is a time per call, not a share of it: what
the harness adds to a call's time and the floor does not take away differs from one worker
process to the next by about this much (microseconds a call). It weighs nothing on a call
of 500 us and 3-5% on one of 6 us. References timed against themselves do not show it (the
same cost on both halves cancels in their ratio); a candidate that differs from its
reference does: the allreduce expert at 1024x1024 at world size 1 (6 us a reference call)
read 0.42-0.56 over ten evaluations whose intervals said +-4%.
Set by scripts/between_repeats.py (benchmarks/results/s19_2026-11-29/between_repeats_fit.json):
the smallest value on its grid whose widened intervals overlap in 95% of pairs of repeated
evaluations and hold their set's geomean in 95%, on 32 sets of bench_eval repeats (21 files)
(1 x H200 at world size 1, 4 x H200 at world size 2) and on 6 sets it was not
fitted on (1 x H200, world size 1). 0.15 is enough on the fitted sets; on the held-out ones
it holds the geomean in 92%. Measured on H200s only."""


def between_sd(device: str, world_size: int, reference_ms: float | None = None,
               candidate_ms: float | None = None, *, per_call_us: float | None = None) -> float:
    """The spread between evaluations to widen an interval by, for this device and world size,
    and (where the halves' times per call are known) the calls' lengths: in quadrature, the
    device's share of a figure and LAUNCH_SD_US over each half's time per call."""
    if device != "cuda":
        base = BETWEEN_EVALUATIONS_SD.get(device, 0.0)
    else:
        base = BETWEEN_EVALUATIONS_SD_CUDA_WS.get(world_size, CUDA_MULTI_RANK_SD)
    us = LAUNCH_SD_US.get(device, 0.0) if per_call_us is None else per_call_us
    if not us or not reference_ms or not candidate_ms or reference_ms <= 0 or candidate_ms <= 0:
        return base
    return math.sqrt(base ** 2 + (us / (reference_ms * 1e3)) ** 2 + (us / (candidate_ms * 1e3)) ** 2)
"""Spread of log(speedup) from one evaluation to the next that no evaluation's own samples
show, by device: added to each side of the bootstrap interval (in quadrature, log space, at
the same confidence).

cpu: every evaluation has a fresh pair of worker processes, and which of them runs its calls
faster holds for the whole evaluation: 36 references timed against themselves (three CPU
self-checks of 12, 2-core CPU machine) spread by 0.066 in log(speedup) about a geomean of
0.997, where their own intervals said 0.045: sqrt(0.066^2 - 0.045^2) = 0.048. Not a bias
(the geomean is 1.00) but a draw per evaluation, which an interval must cover.

cuda: the same per-process draw, smaller: the same reference's self-speedup moved by a few
percent from one evaluation to the next where each evaluation's interval said +-1-2%
(kimi_delta_attention_cp_tp 0.93-1.01 over six runs, the workers' own events agreeing).
Set by scripts/between_evaluations.py --samples: the smallest spread on its grid whose
widened intervals hold 1.0 in 95% of 99 references timed against themselves at world size 1
on one H100, each interval recomputed unwidened from its samples with this estimator (84%
hold with no term); on a second run of all 99, held out of the fit, 94.9% hold with it (83%
without). 0.008 holds 1.0 in only 94% of the pairs' intervals."""


def widened_bounds(point: float, lo: float, hi: float, between_sd: float,
                   confidence: float = 0.95) -> tuple[float, float]:
    """(low, high): an interval about `point` widened on each side, in quadrature and log
    space, by the between-evaluations spread at `confidence`."""
    if between_sd <= 0 or not (0 < lo <= point <= hi):
        return lo, hi
    extra = _widening(between_sd, confidence)
    return (point * math.exp(-math.hypot(math.log(point / lo), extra)),
            point * math.exp(math.hypot(math.log(hi / point), extra)))


def unwidened_bounds(point: float, lo: float, hi: float, between_sd: float,
                     confidence: float = 0.95) -> tuple[float, float]:
    """widened_bounds undone: the interval the samples alone gave, from one a result records
    with its `between_sd` (a fit of the spread must not count the spread twice)."""
    if between_sd <= 0 or not (0 < lo <= point <= hi):
        return lo, hi
    extra = _widening(between_sd, confidence)
    down = math.sqrt(max(0.0, math.log(point / lo) ** 2 - extra ** 2))
    up = math.sqrt(max(0.0, math.log(hi / point) ** 2 - extra ** 2))
    return point * math.exp(-down), point * math.exp(up)


def _widening(between_sd: float, confidence: float) -> float:
    """How far, in log space, the spread between evaluations reaches at `confidence`."""
    from scipy import stats

    return float(stats.norm.ppf(0.5 + confidence / 2)) * between_sd


def speedup_interval(ref: Sequence[float], cand: Sequence[float], confidence: float = 0.95,
                     seed: int = 0, between_sd: float = 0.0) -> tuple[float, float, float]:
    """(point, low, high): the median over samples of the pair's ratio, reference time over
    candidate time (taken in log space, so swapping the halves inverts it exactly), with a
    bootstrap interval over those ratios. scipy's BCa bootstrap; percentile when BCa cannot
    be computed (e.g. all ratios equal). `between_sd`: the device's BETWEEN_EVALUATIONS_SD.

    Why the pair's ratio and not the ratio of the halves' medians: both halves of a sample run the same fresh inputs, back to back. Where the
    work depends on the inputs (routing, sorting, sampling), one sample's calls cost tens of
    percent more than the next's for both halves alike; each half's median keeps that
    spread, the pair's ratio cancels it (moe_ep_fused_forward_lora: each half's samples
    spread by 0.33 in log, their ratios by 0.09; 1.003 [0.997, 1.012] against 0.973 [0.852,
    1.011] on the same samples). Where the halves' noise is their own (launch-bound calls),
    the ratios spread more than either half, and the median of them is no worse for it.
    Over every reference timed against itself (99, one H100, world size 1, the same samples),
    points beyond +-3%: 5 against 12 (rms of log(speedup) 0.014 against 0.023), and 8 against
    12 in a second run.
    Raises ValueError on a time that is not finite and positive: evidence.figures never
    makes one, so one would be a harness bug."""
    import numpy as np
    from scipy import stats

    r = np.asarray(ref, dtype=float)
    c = np.asarray(cand, dtype=float)
    if len(r) != len(c) or not len(r) or not (np.isfinite(r).all() and np.isfinite(c).all() and (r > 0).all()
                                               and (c > 0).all()):
        raise ValueError(f"paired times must be finite, positive and as many on each side ({len(r)}, {len(c)})")
    logs = np.log(r) - np.log(c)
    point = float(np.exp(np.median(logs)))
    if len(logs) < 3:
        return point, math.nan, math.nan

    def median(a: "np.ndarray", axis: int = -1) -> "np.ndarray":
        return np.median(a, axis=axis)

    rng = np.random.default_rng(seed)
    for method in ("BCa", "percentile"):
        try:
            res = stats.bootstrap((logs,), median, vectorized=True, n_resamples=2000,
                                  confidence_level=confidence, method=method, random_state=rng)
        except Exception:  # noqa: BLE001 - degenerate samples: try the next method
            continue
        lo, hi = math.exp(float(res.confidence_interval.low)), math.exp(float(res.confidence_interval.high))
        if math.isfinite(lo) and math.isfinite(hi) and lo > 0:
            return (point, *widened_bounds(point, min(lo, point), max(hi, point), between_sd, confidence))
    return (point, *widened_bounds(point, point, point, between_sd, confidence))
