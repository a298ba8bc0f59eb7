"""One row per recorded cell of one or more sweeps: what issue 43's table asks for.

    python3 scripts/sweep_cells_table.py SWEEP_DIR [SWEEP_DIR ...] [--out FILE.md]

Reads each sweep's journal.jsonl through the store (each cell's latest record, as `pkb
report` does) and prints a markdown table per world size: status, speedup with its 95%
interval, roofline fraction, reference and candidate ms, the timing's mode and flags, then the
geomean of the correct speedups and the cells below 1.0x. The leaderboard shows the best
speedup per problem; this shows each cell's evidence, which a reader of published numbers
checks.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from pkb_ray.records import CellResult
from pkb_ray.store import current_records, read_journal


def row(rec: CellResult) -> dict:
    ev = rec.evaluation
    out = {"problem": rec.key.problem, "category": rec.category, "model": rec.key.model,
           "world_size": rec.world_size or (ev.world_size if ev is not None else None),
           "status": rec.status.value, "correct": False, "speedup": None, "lo": None, "hi": None,
           "roofline": None, "reference_ms": None, "candidate_ms": None, "gated": None, "co_tenancy": None,
           "flags": []}
    if ev is not None:
        out.update(correct=bool(ev.correct), speedup=ev.speedup, lo=ev.speedup_ci_low, hi=ev.speedup_ci_high,
                   roofline=ev.roofline_fraction, reference_ms=ev.reference_ms, candidate_ms=ev.candidate_ms,
                   gated=ev.timing.gated if ev.timing is not None else None, co_tenancy=ev.co_tenancy,
                   flags=[f for f in ev.flags if f in ("implausible", "launch_bound", "timed_ungated")])
    return out


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def table(rows: list[dict]) -> list[str]:
    out = ["| problem | category | model | status | speedup [95%] | roofline | reference ms | candidate ms "
           "| gated | co-tenancy | flags |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["category"], r["problem"])):
        sp = "-" if r["speedup"] is None else f"{r['speedup']:.3f} [{fmt(r['lo'], '.3f')}, {fmt(r['hi'], '.3f')}]"
        out.append(f"| {r['problem']} | {r['category']} | {r['model']} | {r['status']} | {sp} | "
                   f"{fmt(r['roofline'], '.3f')} | {fmt(r['reference_ms'], '.4f')} | {fmt(r['candidate_ms'], '.4f')} | "
                   f"{r['gated']} | {r['co_tenancy']} | {' '.join(r['flags'])} |")
    timed = [r["speedup"] for r in rows if r["correct"] and r["speedup"]]
    cats = {r["category"] for r in rows if r["correct"]}
    out.append("")
    out.append(f"{sum(r['correct'] for r in rows)} of {len(rows)} correct in {len(cats)} categories; "
               + (f"geomean speedup {math.exp(sum(map(math.log, timed)) / len(timed)):.3f} over {len(timed)}; "
                  if timed else "")
               + f"roofline above 1.0: {sum(1 for r in rows if (r['roofline'] or 0) > 1.0)}; "
               f"flagged implausible: {sum('implausible' in r['flags'] for r in rows)}")
    slow = [f"{r['problem']} {r['speedup']:.2f}" for r in rows if r["correct"] and r["speedup"] and r["speedup"] < 1.0]
    out.append(f"below 1.0x: {', '.join(slow) if slow else 'none'}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", nargs="+", type=Path, help="sweep directories (sweeps/<name>)")
    ap.add_argument("--out", type=Path, help="also write the tables to this markdown file")
    args = ap.parse_args()
    rows = [row(rec) for d in args.sweeps for rec in current_records(read_journal(d / "journal.jsonl"))]
    lines: list[str] = []
    for ws in sorted({r["world_size"] for r in rows}, key=lambda w: (w is None, w)):
        lines += [f"## World size {ws}", ""] + table([r for r in rows if r["world_size"] == ws]) + [""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
