"""Summarize CPU (or GPU) self-checks: sweeps of model=reference, each reference evaluated as
its own candidate, where every speedup should read 1.0.

    python scripts/selfcheck_summary.py sweeps/NAME1 [sweeps/NAME2 ...] [--out FILE.txt]

Per sweep: each cell's speedup and interval, whether the interval holds 1.0, the samples and
calls per sample, the floor, why sampling stopped, and the workers' own clocks over the
judge's figure (candidate, reference); then the geomean, intervals holding 1.0, cells within
1.00 +- 0.03, and harness errors (cells recorded as such, and tries of the sweep that ended
in one: store/harness_tries.py). The acceptance of the timing issue (#23): geomean within
0.97-1.03, at least 95% of intervals holding 1.0, no harness_error, in 3 runs in a row.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pkb_ray.records import FailureClass
from pkb_ray.store import current_records, read_journal

WITHIN = 0.03


def summarize(sweep: Path) -> tuple[Table, dict]:
    records = sorted(current_records(read_journal(sweep / "journal.jsonl")), key=lambda r: r.key.problem)
    table = Table(title=str(sweep), show_lines=False)
    for col in ("problem", "status", "speedup", "interval", "holds 1", "n x k", "floor ms", "stop", "own clocks c/r"):
        table.add_column(col)
    logs, holds, within, harness, other = [], 0, 0, 0, 0
    for r in records:
        ev, t = r.evaluation, (r.evaluation.timing if r.evaluation else None)
        if r.failure == FailureClass.HARNESS_ERROR:
            harness += 1
        if ev is None or ev.speedup is None or not ev.correct:
            other += 1
            table.add_row(r.key.problem, r.status.value, "-", "-", "-", "-", "-", "-", (r.message or "")[:60])
            continue
        lo, hi = ev.speedup_ci_low, ev.speedup_ci_high
        hold = lo is not None and hi is not None and lo <= 1.0 <= hi
        holds += hold
        within += abs(ev.speedup - 1.0) <= WITHIN
        logs.append(math.log(ev.speedup))
        clocks = f"{t.candidate_report_ratio:.3f}/{t.reference_report_ratio:.3f}" \
            if t and t.candidate_report_ratio and t.reference_report_ratio else "-"
        table.add_row(r.key.problem, r.status.value, f"{ev.speedup:.3f}", f"[{lo:.3f}, {hi:.3f}]" if lo else "-",
                      "yes" if hold else "NO", f"{t.samples} x {t.calls_per_sample}" if t else "-",
                      f"{t.floor_ms:.3f}" if t else "-", t.stopped if t else "-", clocks)
    # Every try that ended in harness_error, recorded or retried since (a cell is recorded as
    # one only after MAX_TRIES of them): counted apart, not added to the recorded ones.
    tries_file = sweep / "harness_tries.jsonl"
    tries = sum(1 for line in tries_file.read_text().splitlines() if line.strip()) if tries_file.exists() else 0
    geo = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    summary = {"sweep": str(sweep), "cells": len(records), "timed": len(logs), "geomean": geo,
               "holding_1": holds, f"within_{WITHIN}": within, "harness_error": harness, "harness_tries": tries, "not_timed": other}
    return table, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, help="also write the tables as text to this file")
    args = ap.parse_args(argv)
    console = Console(record=bool(args.out), width=130)
    total = {"timed": 0, "holding_1": 0, "harness_error": 0, "harness_tries": 0}
    for sweep in args.sweeps:
        table, s = summarize(sweep)
        console.print(table)
        console.print(f"geomean {s['geomean']:.3f}; intervals holding 1.0: {s['holding_1']} of {s['timed']}; "
                      f"within 1.00 +- {WITHIN}: {s[f'within_{WITHIN}']}; harness_error: {s['harness_error']} "
                      f"(tries: {s['harness_tries']}); not timed: {s['not_timed']}\n")
        for k in total:
            total[k] += s[k]
    console.print(f"all: intervals holding 1.0 {total['holding_1']} of {total['timed']}; "
                  f"harness_error {total['harness_error']} (tries: {total['harness_tries']})")
    if args.out:
        args.out.write_text(console.export_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
