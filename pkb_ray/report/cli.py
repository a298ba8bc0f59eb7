"""`pkb report SWEEP_NAME [SWEEP_NAME ...]`: rebuild the leaderboard from sweeps' journals.

One name: the sweep's leaderboard, written beside its journal. Several: their current
records in one leaderboard (modes side by side), refused when their settings differ in
anything but the mode (report/combine.py), written to `<root>/_compare/<a>+<b>+.../` or
`--out`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

COMPARE_DIR = "_compare"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild a sweep's leaderboard from its journal; with "
                       "several sweeps, one leaderboard of them all (modes side by side)")
    p.add_argument("sweep_names", nargs="+", metavar="SWEEP_NAME")
    p.add_argument("--root", default="sweeps", help="the sweeps directory (sweep.root)")
    p.add_argument("--out", default=None, help="where a report over several sweeps goes "
                   f"(default: ROOT/{COMPARE_DIR}/A+B+...)")
    p.add_argument("--wide", action="store_true", help="every column of every table, however wide "
                   "(by default columns are left out, and named, to fit the terminal)")
    p.add_argument("--max-co-tenancy", type=int, default=None, metavar="N",
                   help="only speedups timed with at most N other evaluations on the node at once "
                   "(0: alone; README, GPU groups); cells without a speedup are all kept")
    p.add_argument("--split-co-tenancy", action="store_true",
                   help="one leaderboard per co-tenancy of the timed cells (0, 1, 2, ...), each in its own "
                   "directory; cells without a speedup appear in every one")
    p.set_defaults(handler=_run)


def _fail(message: str) -> int:
    print(f"pkb report: {message}", file=sys.stderr)
    return 2


def _read(root: Path, name: str):
    """The sweep's current records (one per cell: the latest; a superseded record stays in
    the journal, unshown)."""
    from pkb_ray.store.journal import current_records, read_journal

    return current_records(read_journal(root / name / "journal.jsonl"))


def _run(args: argparse.Namespace) -> int:
    from pkb_ray.console import wrap
    from pkb_ray.report.combine import SettingsDiffer, combine_sweeps, sweep_modes
    from pkb_ray.report.findings import times_itself
    from pkb_ray.report.leaderboard import build_report, print_leaderboard

    root, names = Path(args.root), list(args.sweep_names)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        return _fail(f"sweep {', '.join(repeated)} named more than once")
    if args.out and len(names) == 1:
        return _fail("--out is for a report over several sweeps; one sweep's report is "
                     f"written beside its journal ({root / names[0]})")
    sweeps = {}
    for name in names:
        try:
            sweeps[name] = _read(root, name)
        except FileNotFoundError as exc:
            known = sorted(p.name for p in root.glob("*") if (p / "journal.jsonl").exists())
            return _fail(f"{exc}; sweeps under {root}/: {', '.join(known) or 'none'}")
        except ValueError as exc:  # a corrupted line: the message names file and line
            return _fail(str(exc))
    if len(names) == 1:
        results, out_dir = sweeps[names[0]], root / names[0]
        title = f"sweep {names[0]}: {len(results)} cells"
    else:
        try:
            results = combine_sweeps(sweeps)
        except SettingsDiffer as exc:
            return _fail(str(exc))
        out_dir = Path(args.out) if args.out else root / COMPARE_DIR / "+".join(names)
        title = (f"sweeps {', '.join(f'{n} ({sweep_modes(r)}, {len(r)} cells)' for n, r in sweeps.items())}"
                 f": {len(results)} cells")
    if args.max_co_tenancy is not None:
        if args.max_co_tenancy < 0:
            return _fail(f"--max-co-tenancy {args.max_co_tenancy}: a count of other evaluations, 0 or more")
        n = args.max_co_tenancy
        kept = [r for r in results if not timed(r) or ((c := co_tenancy_of(r)) is not None and c <= n)]
        title += (f", {len(kept)} with co-tenancy <= {args.max_co_tenancy} ({len(results) - len(kept)} timed "
                  "beside more or unrecorded: left out; cells with no speedup are all kept)")
        results, out_dir = kept, out_dir / f"co_tenancy_le{args.max_co_tenancy}"
    parts = split_by_co_tenancy(results) if args.split_co_tenancy else {None: results}
    report_args = " ".join(names) + ("" if str(root) == "sweeps" else f" --root {root}")
    for level, part in parts.items():
        where = out_dir if level is None and not args.split_co_tenancy else out_dir / f"co_tenancy_{level}"
        head = title if not args.split_co_tenancy else \
            f"{title}; co-tenancy {level}: {len(part)} cells (those without a speedup in every part)"
        report = build_report(part, where, head)
        print_leaderboard(report, head, wide=args.wide,
                          self_check=bool(part) and all(times_itself(m) for m in {r.key.model for r in part}),
                          report_args=report_args)
        print(wrap(f"wrote into {where}: " + ", ".join(p.name for p in report.files())))
    return 0


def co_tenancy_of(record) -> int | None:
    """How many other evaluations shared the record's node at most (None: not evaluated, or
    recorded before GPU groups)."""
    return record.evaluation.co_tenancy if record.evaluation is not None else None


def timed(record) -> bool:
    """Whether the cell has a speedup, the one figure neighbours can move. A wrong answer, a
    build failure or a cell with no code is what it is on any node: filtering those by
    co-tenancy would drop failures and flatter the models that fail most."""
    return record.evaluation is not None and record.evaluation.speedup is not None


def split_by_co_tenancy(results: list) -> dict:
    """Timed records by co-tenancy, lowest first ("none": recorded before GPU groups), each
    part with every untimed record too (their outcome does not depend on neighbours)."""
    parts: dict = {}
    for r in results:
        if timed(r):
            c = co_tenancy_of(r)
            parts.setdefault("none" if c is None else c, []).append(r)
    untimed = [r for r in results if not timed(r)]
    ordered = sorted(parts.items(), key=lambda kv: (kv[0] == "none", kv[0] if kv[0] != "none" else 0))
    return {level: part + untimed for level, part in ordered} or {0: untimed}
