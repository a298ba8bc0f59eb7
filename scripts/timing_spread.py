"""What makes one candidate's figure differ between evaluations: per evaluation of a
bench_eval result, the figure, the same ratio by the workers' own CUDA events, the two
workers' context paces, and the noise of the judge's windows beyond the events (the host's
part: the gate, the answer, the wake-ups).

    python3 scripts/timing_spread.py benchmarks/results/s18_2026-11-29/g13/bench_eval_cuda_ws1_pace.json

Needs records with windows_ms (harness 0.5.5 at e265db4 or later) and, for the paces,
context_pace_us.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np


def robust_sd(xs: list[float]) -> float:
    """The interquartile range as a normal sd: the windows have bursts a plain sd is all of."""
    q1, q3 = np.percentile(xs, [25, 75])
    return float((q3 - q1) / 1.349)


def one(run: dict) -> dict:
    t = run["timing"] or {}
    rows = t.get("windows_ms") or []
    out = {"speedup": run.get("speedup"), "samples": len(rows), "calls_per_sample": t.get("calls_per_sample"),
           "taken": run.get("sandbox_taken") or "", "apart": run.get("paces_apart")}
    if rows and len(rows[0]) >= 4:
        ref_w, cand_w, ref_e, cand_e = (list(col) for col in zip(*rows))
        out["events_ratio"] = statistics.median(r / c for r, c in zip(ref_e, cand_e) if c > 0)
        out["host_sd_ms"] = (robust_sd([w - e for w, e in zip(ref_w, ref_e)]),
                             robust_sd([w - e for w, e in zip(cand_w, cand_e)]))
        # What a half's time of record (window less floor) holds beyond the worker's events:
        # the part of the harness' own cost that the floor did not take away.
        floor = t.get("floor_ms") or 0.0
        out["excess_ms"] = (statistics.median(ref_w) - floor - statistics.median(ref_e),
                            statistics.median(cand_w) - floor - statistics.median(cand_e))
    paces = t.get("context_pace_us") or []
    if paces:
        out["paces_us"] = paces
        out["pace_ratio"] = math.exp(sum(math.log(r / c) for r, c in paces) / len(paces))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    args = ap.parse_args()
    for path in args.results:
        data = json.loads(path.read_text())
        for shape in data["shapes"]:
            rows = [one(r) for r in shape["runs"]]
            print(f"{path.name} {shape['shape']} (world size {data['world_size']})")
            for r in rows:
                line = f"  speedup {r['speedup']:.3f}" if r["speedup"] else "  speedup -"
                if "events_ratio" in r:
                    line += (f"  events {r['events_ratio']:.3f}  host sd {r['host_sd_ms'][0]:.3f}/{r['host_sd_ms'][1]:.3f} ms"
                             f"  excess {r['excess_ms'][0]:.3f}/{r['excess_ms'][1]:.3f} ms")
                if "pace_ratio" in r:
                    line += f"  paces {r['paces_us']} (ratio {r['pace_ratio']:.3f})"
                if r["taken"]:  # bench_eval records from 2026-11-29 on: how the node chose the workers
                    apart = "-" if r["apart"] is None else f"{r['apart']:.3f}"
                    line += f"  taken {r['taken']} (apart {apart})"
                print(line + f"  ({r['samples']} samples of {r['calls_per_sample']})")
            sp = [r["speedup"] for r in rows if r["speedup"]]
            if len(sp) > 1:
                print(f"  max/min: speedup {max(sp) / min(sp):.3f}", end="")
                ev = [r["events_ratio"] for r in rows if "events_ratio" in r]
                if len(ev) > 1:
                    print(f", events {max(ev) / min(ev):.3f}", end="")
                pr = [(r["pace_ratio"], r["speedup"]) for r in rows if "pace_ratio" in r and r["speedup"]]
                if len(pr) > 2:
                    c = np.corrcoef([math.log(a) for a, _ in pr], [math.log(b) for _, b in pr])[0, 1]
                    same = [b for a, b in pr if abs(math.log(a)) <= 0.02]
                    print(f"; correlation of log speedup with log pace ratio {c:.2f}", end="")
                    if len(same) > 1:
                        print(f"; {len(same)} with paces within 2%: max/min {max(same) / min(same):.3f}", end="")
                print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
