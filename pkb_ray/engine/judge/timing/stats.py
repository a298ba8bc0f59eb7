"""Statistics of timed samples: medians, their confidence, and the speedup's interval.

Pure functions of numbers; used by the judges (when to stop sampling) and the node (the
interval it reports).
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence


def rel_ci_of_median(samples: Sequence[float]) -> float:
    """Relative half-width of a distribution-free 95% confidence interval of the median
    (order statistics)."""
    n = len(samples)
    if n < 3:
        return math.inf
    s = sorted(samples)
    med = statistics.median(s)
    if med <= 0:
        return math.inf
    k = 1.96 * math.sqrt(n) / 2
    lo = s[max(0, math.floor(n / 2 - k))]
    hi = s[min(n - 1, math.ceil(n / 2 + k))]
    return (hi - lo) / 2 / med


BETWEEN_EVALUATIONS_SD = {"cpu": 0.048, "cuda": 0.008}
"""Spread of log(speedup) from one evaluation to the next that no evaluation's own samples
show, by device: added to each side of the bootstrap interval (in quadrature, log space, at
the same confidence).

cpu: every evaluation has a fresh pair of worker processes, and which of them runs its calls
faster holds for the whole evaluation: 36 references timed against themselves (three CPU
self-checks of 12, 2-core CPU machine, harness 0.4.2's scheduling, 2026-11-26) spread by
0.066 in log(speedup) about a geomean of 0.997, where their own intervals said 0.045:
sqrt(0.066^2 - 0.045^2) = 0.048 (benchmarks/results/cpu_selfcheck_2026-11-26). Not a bias
(the geomean is 1.00) but a draw per evaluation, which an interval must cover.

cuda: the same per-process draw, smaller: the same reference's self-speedup moved by a few
percent from one evaluation to the next where each evaluation's interval said +-1-2%
(gated_deltanet_ulysses, the host-waiting problems: benchmarks/results/gpu_ws1_0.4.3_
2026-11-26). Set by scripts/between_evaluations.py: the smallest spread whose widened
intervals hold 1.0 in 95% of 110 self-timed evaluations at world size 1 on one H100 (all
references, harness 0.4.3, and 13 of them again; 92% hold with no term), benchmarks/results/
ws1_0.4.4_2026-11-26/between_evaluations_fit.json."""


def widened_bounds(point: float, lo: float, hi: float, between_sd: float,
                   confidence: float = 0.95) -> tuple[float, float]:
    """(low, high): an interval about `point` widened on each side, in quadrature and log
    space, by the between-evaluations spread at `confidence`."""
    if between_sd <= 0 or not (0 < lo <= point <= hi):
        return lo, hi
    from scipy import stats

    extra = float(stats.norm.ppf(0.5 + confidence / 2)) * between_sd
    return (point * math.exp(-math.hypot(math.log(point / lo), extra)),
            point * math.exp(math.hypot(math.log(hi / point), extra)))


def speedup_interval(ref: Sequence[float], cand: Sequence[float], confidence: float = 0.95,
                     seed: int = 0, between_sd: float = 0.0) -> tuple[float, float, float]:
    """(point, low, high): the median over samples of the pair's ratio, reference time over
    candidate time (taken in log space, so swapping the halves inverts it exactly), with a
    bootstrap interval over those ratios. scipy's BCa bootstrap; percentile when BCa cannot
    be computed (e.g. all ratios equal). `between_sd`: the device's BETWEEN_EVALUATIONS_SD.

    Why the pair's ratio and not the ratio of the halves' medians (harness 0.4.4 and
    earlier): both halves of a sample run the same fresh inputs, back to back. Where the
    work depends on the inputs (routing, sorting, sampling), one sample's calls cost tens of
    percent more than the next's for both halves alike; each half's median keeps that spread,
    and their ratio moved by 5-15% on references timed against themselves. The pair's ratio
    cancels it: on the same samples, moe_ep_fused_forward_lora 1.003 [0.997, 1.012] against
    0.973 [0.852, 1.011], tile_parallel_vae_decode 1.013 against 1.139 (one H100, world size 1,
    benchmarks/results/ws1_0.4.4_2026-11-26/estimators.md)."""
    import numpy as np
    from scipy import stats

    r = np.asarray(ref, dtype=float)
    c = np.asarray(cand, dtype=float)
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
            return _widened(point, min(lo, point), max(hi, point), between_sd, confidence)
    return _widened(point, point, point, between_sd, confidence)


def _widened(point: float, lo: float, hi: float, between_sd: float, confidence: float) -> tuple[float, float, float]:
    return (point, *widened_bounds(point, lo, hi, between_sd, confidence))
