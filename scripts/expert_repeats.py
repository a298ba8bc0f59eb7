"""Each shipped expert evaluated several times as separate evaluations: one kernel, one
figure, whichever evaluation measures it.

    python scripts/expert_repeats.py --world-size 2 --repeats 5 [--ids allreduce,broadcast]

For every problem with a `problems/<id>/expert.py`, --repeats evaluations at the bench size
on the GPUs this process sees (CUDA_VISIBLE_DEVICES), one after another on the same judges,
each with a fresh sandboxed worker and fresh secret inputs. Reports per expert the speedups
with their intervals, max/min of the speedups (target <= 1.05), whether every pair of
intervals overlaps, the timing mode and where it came from (the first evaluation decides the
problem's mode, the next ones read it), and node-seconds with where they went.

Results: <out>/expert_repeats_ws<N><tag>.{json,md}, with the exact command.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig
from pkb_ray.engine import HARNESS_VERSION, EvalRequest, evaluate
from pkb_ray.problems.includes import read_candidate_file

REPO = Path(__file__).resolve().parents[1]


def experts(ids: list[str]) -> list[str]:
    found = sorted(p.parent.name for p in (REPO / "problems").glob("*/expert.py"))
    return [p for p in found if not ids or p in ids]


def overlap(a: list, b: list) -> bool:
    return a[0] is not None and b[0] is not None and a[0] <= b[1] and b[0] <= a[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ids", default="", help="comma-separated problems (default: every one with an expert)")
    ap.add_argument("--size", default="bench")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--cache-dir", default="/tmp/pkb_expert_repeats")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    rows = []
    for pid in experts([i for i in args.ids.split(",") if i]):
        source = read_candidate_file(REPO / "problems" / pid / "expert.py")
        runs = []
        for k in range(args.repeats):
            req = EvalRequest(problem_id=pid, problems_source="builtin", candidate_source=source, device="cuda",
                              size=args.size, cell_id=f"expert/{pid}/{k}",
                              eval=EvalConfig(world_size=args.world_size, trials=args.trials,
                                              timing=TimingConfig(), timeouts=TimeoutConfig(),
                                              cache_dir=args.cache_dir))
            res = evaluate(req)
            t = res.timing
            runs.append({"correct": res.correct, "failure": res.failure.value if res.failure else None,
                         "speedup": res.speedup, "ci": [res.speedup_ci_low, res.speedup_ci_high],
                         "candidate_ms": res.candidate_ms, "reference_ms": res.reference_ms,
                         "roofline_fraction": res.roofline_fraction, "flags": res.flags,
                         "node_seconds": res.node_seconds, "timing": dataclasses.asdict(t) if t else None,
                         "seconds": (res.evidence or {}).get("seconds"), "message": res.message[:400]})
            r = runs[-1]
            print(f"{pid} #{k}: correct={r['correct']} speedup={r['speedup']} ci={r['ci']} "
                  f"cand={r['candidate_ms']} ref={r['reference_ms']} node_s={r['node_seconds']:.2f} "
                  f"mode={'held' if t and t.gated else 'unheld'}/k={t.calls_per_sample if t else '?'}/"
                  f"{t.mode_source if t else '?'} n={t.samples if t else 0} flags={r['flags']}"
                  f"{'' if r['correct'] else ' ' + r['message']}", flush=True)
        sp = [r["speedup"] for r in runs if r["correct"] and r["speedup"]]
        cis = [r["ci"] for r in runs if r["correct"] and r["speedup"]]
        rows.append({"problem": pid, "runs": runs,
                     "max_over_min": max(sp) / min(sp) if len(sp) == len(runs) and sp else None,
                     "intervals_overlap": all(overlap(a, b) for a, b in itertools.combinations(cis, 2))
                     if len(cis) == len(runs) else False,
                     "median_node_seconds_after_first": statistics.median(r["node_seconds"] for r in runs[1:])
                     if len(runs) > 1 else None})
        _write(args, command, rows)
    _write(args, command, rows, say=True)
    return 0


def _write(args: argparse.Namespace, command: str, rows: list[dict], say: bool = False) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"expert_repeats_ws{args.world_size}{args.tag}"
    summary = {"command": command, "world_size": args.world_size, "repeats": args.repeats, "size": args.size,
               "harness_version": HARNESS_VERSION, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "rows": rows}
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=1))
    md = [f"# Each expert evaluated {args.repeats} times (world size {args.world_size}, {args.size})", "",
          f"Command: `{command}`", "", f"Harness {HARNESS_VERSION}, {summary['when']}.", "",
          "| problem | speedups [95% interval] | max/min | intervals overlap | mode | node-s after the first |",
          "|---|---|---|---|---|---|"]
    for r in rows:
        sp = "; ".join(f"{x['speedup']:.3f} [{x['ci'][0]:.3f}, {x['ci'][1]:.3f}]" if x["speedup"] and x["ci"][0]
                       else (x["failure"] or "no figure") for x in r["runs"])
        modes = sorted({f"{'held' if x['timing']['gated'] else 'unheld'} k={x['timing']['calls_per_sample']}"
                        for x in r["runs"] if x["timing"]})
        mm = f"{r['max_over_min']:.3f}" if r["max_over_min"] else "n/a"
        ns = f"{r['median_node_seconds_after_first']:.2f}" if r["median_node_seconds_after_first"] else "n/a"
        md.append(f"| {r['problem']} | {sp} | {mm} | {'yes' if r['intervals_overlap'] else 'NO'} | "
                  f"{', '.join(modes)} | {ns} |")
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    if say:
        print("\n".join(md), flush=True)


if __name__ == "__main__":
    sys.exit(main())
