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


def speedup_interval(ref: Sequence[float], cand: Sequence[float], confidence: float = 0.95,
                     seed: int = 0) -> tuple[float, float, float]:
    """(ratio of medians, low, high): reference median over candidate median, with a
    bootstrap interval over the paired samples (sample i of each was taken back to back on
    the same input contents, so they are resampled together and shared drift cancels).
    scipy's BCa bootstrap; percentile when BCa cannot be computed (e.g. all ratios equal)."""
    import numpy as np
    from scipy import stats

    r = np.asarray(ref, dtype=float)
    c = np.asarray(cand, dtype=float)
    point = float(np.median(r) / np.median(c))
    if len(r) < 3:
        return point, math.nan, math.nan

    def ratio(a: "np.ndarray", b: "np.ndarray", axis: int = -1) -> "np.ndarray":
        return np.median(a, axis=axis) / np.median(b, axis=axis)

    rng = np.random.default_rng(seed)
    for method in ("BCa", "percentile"):
        try:
            res = stats.bootstrap((r, c), ratio, paired=True, vectorized=True, n_resamples=2000,
                                  confidence_level=confidence, method=method, random_state=rng)
        except Exception:  # noqa: BLE001 - degenerate samples: try the next method
            continue
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return point, min(lo, point), max(hi, point)
    return point, point, point
