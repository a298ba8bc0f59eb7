"""Summarize a device run's sweep journals and timing-variant benchmarks as Markdown.

    python scripts/device_runs/device_2026-11-22/summarize.py benchmarks/results/device_2026-11-22

It reads the files of that one run (2 x H200, 2026-11-22) and lives beside them.

Reads experts_journal.jsonl / refs_journal.jsonl (written by `scripts/device_verify.sh
sweep refs`) and bench_eval_cuda_*.json (bench_eval.py --tag runs); writes SUMMARY.md.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def journal_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def fmt(v, nd=4):
    return "-" if v is None else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def cells_table(rows: list[dict], title: str) -> list[str]:
    out = [f"## {title}", "", "| problem | status | candidate ms | reference ms | speedup | roofline fraction | node s |",
           "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["key"]["problem"]):
        ev = r["evaluation"] or {}
        out.append(f"| {r['key']['problem']} | {r['status']} | {fmt(ev.get('candidate_ms'))} | "
                   f"{fmt(ev.get('reference_ms'))} | {fmt(ev.get('speedup'), 3)} | "
                   f"{fmt(ev.get('roofline_fraction'), 3)} | {fmt(ev.get('node_seconds'), 2)} |")
    return out + [""]


def variants_table(files: list[Path]) -> list[str]:
    out = ["## Timing fidelity: one unchanged kernel (allreduce expert), 5 separate evaluations",
           "", "| variant (TimingConfig) | shape | candidate ms (min..max) | max/min candidate | "
           "reference ms | median warm node s |", "|---|---|---|---|---|---|"]
    for f in files:
        d = json.loads(f.read_text())
        t = d.get("timing", {})
        label = f"clock={t.get('clock')}, align_streams={t.get('align_streams')}, warmup_ms={t.get('warmup_ms')}"
        for s in d["shapes"]:
            times = [r["candidate_ms"] for r in s["runs"]]
            refs = sorted({round(r["reference_ms"], 4) for r in s["runs"]})
            out.append(f"| {label} | {s['shape']} | {min(times):.4f}..{max(times):.4f} | "
                       f"{s['candidate_ms_max_over_min']:.3f} | {', '.join(map(str, refs))} | "
                       f"{s['median_warm_node_seconds']:.2f} |")
    return out + [""]


def main() -> int:
    d = Path(sys.argv[1])
    md = [f"# Device results ({d.name})", ""]
    notes = d / "NOTES.md"
    if notes.exists():
        md += [notes.read_text().strip(), ""]
    if (d / "experts_journal.jsonl").exists():
        md += cells_table(journal_rows(d / "experts_journal.jsonl"),
                          "Expert solutions through the sweep (Ray whole-node actor, world size 2, bench size)")
    if (d / "refs_journal.jsonl").exists():
        rows = journal_rows(d / "refs_journal.jsonl")
        md += cells_table(rows, "Reference self-check of every problem on CUDA/NCCL (model=reference, bench size)")
        ms = [r["evaluation"]["reference_ms"] for r in rows if r["evaluation"]]
        md += [f"Reference time at world size 2, bench size: median {statistics.median(ms):.3f} ms, "
               f"min {min(ms):.3f} ms, max {max(ms):.3f} ms over {len(ms)} problems.", ""]
    after = d / "after_fast_experts" / "experts_journal.jsonl"
    if after.exists():
        md += cells_table(journal_rows(after), "Expert solutions with the fast path, through the sweep (same command)")
    variants = sorted(d.glob("bench_eval_cuda_*.json"))
    if variants:
        md += variants_table(variants)
    (d / "SUMMARY.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
