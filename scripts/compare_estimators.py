"""Two speedup estimators on the same recorded samples: the ratio of the halves' medians
(harness 0.4.4 and earlier) and the median of the pairs' ratios (engine/node/timing_stats.py now).

    python scripts/compare_estimators.py SAMPLES.jsonl IDS.txt [--out FILE.md]

SAMPLES.jsonl: one line per evaluation, {"ref": [...], "cand": [...]} (ms per call, paired by
sample), as a device run's diagnostic patch of verdict.py wrote them; IDS.txt: the problem
of each line, comma-separated, in order. Every evaluation is a reference timed against
itself: the true speedup is 1.0. Both intervals are percentile bootstraps (2000 resamples,
seed 0) without the between-evaluations term, so only the estimators differ.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats


def _interval(data: tuple, statistic, paired: bool) -> tuple[float, float]:
    res = stats.bootstrap(data, statistic, paired=paired, vectorized=True, n_resamples=2000,
                          method="percentile", random_state=np.random.default_rng(0))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples", type=Path)
    ap.add_argument("ids", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    ids = args.ids.read_text().strip().split(",")
    rows = [json.loads(line) for line in args.samples.read_text().splitlines() if line.strip()]
    lines = ["| problem | samples | sd log(ref) | sd log(ratio) | medians' ratio [95%] | pairs' median [95%] |",
             "|---|---|---|---|---|---|"]
    ok = {"medians": 0, "pairs": 0}
    for pid, row in zip(ids, rows):
        ref, cand = np.asarray(row["ref"]), np.asarray(row["cand"])
        logs = np.log(ref) - np.log(cand)
        a = float(np.median(ref) / np.median(cand))
        a_lo, a_hi = _interval((ref, cand), lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis), True)
        b = math.exp(float(np.median(logs)))
        b_lo, b_hi = (math.exp(v) for v in _interval((logs,), lambda x, axis=-1: np.median(x, axis=axis), False))
        ok["medians"] += abs(a - 1) <= 0.03 and a_lo <= 1 <= a_hi
        ok["pairs"] += abs(b - 1) <= 0.03 and b_lo <= 1 <= b_hi
        lines.append(f"| {pid} | {len(ref)} | {np.std(np.log(ref)):.3f} | {np.std(logs):.3f} | "
                     f"{a:.3f} [{a_lo:.3f}, {a_hi:.3f}] | {b:.3f} [{b_lo:.3f}, {b_hi:.3f}] |")
    lines += ["", f"Within 1.00 +- 0.03 with the interval holding 1.0, of {len(rows)}: medians' ratio "
              f"{ok['medians']}, pairs' median {ok['pairs']}."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(f"# Two estimators on the same samples\n\nCommand: `python scripts/compare_estimators.py "
                            f"{args.samples} {args.ids}`\n\n{text}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
