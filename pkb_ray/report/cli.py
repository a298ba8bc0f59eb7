"""`pkb report SWEEP_NAME`: rebuild the leaderboard from a sweep's journal."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild a sweep's leaderboard from its journal")
    p.add_argument("sweep_name")
    p.add_argument("--root", default="sweeps", help="the sweeps directory (sweep.root)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import sys

    from pkb_ray.report.leaderboard import build_report, print_leaderboard
    from pkb_ray.store.journal import current_records, read_journal

    sweep_dir = Path(args.root) / args.sweep_name
    try:
        results = read_journal(sweep_dir / "journal.jsonl")
    except FileNotFoundError as exc:
        known = sorted(p.name for p in Path(args.root).glob("*") if (p / "journal.jsonl").exists())
        print(f"pkb report: {exc}; sweeps under {args.root}/: {', '.join(known) or 'none'}",
              file=sys.stderr)
        return 2
    except ValueError as exc:  # a corrupted line: the message names file and line
        print(f"pkb report: {exc}", file=sys.stderr)
        return 2
    # One record per cell: the latest (a superseded record stays in the journal, unshown).
    results = current_records(results)
    title = f"sweep {args.sweep_name}: {len(results)} cells"
    report = build_report(results, sweep_dir, title)
    print_leaderboard(report, title)
    print("wrote " + ", ".join(str(p) for p in report.files()))
    return 0
