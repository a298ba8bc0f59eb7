"""`pkb problems list [--json]`, `pkb problems check --world-size N [--ids a,b ...]` and
`pkb problems coverage`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

ROOFLINE_WORLD_SIZE = 8


def register(subparsers) -> None:
    p = subparsers.add_parser("problems", help="list and check the problem suite")
    sub = p.add_subparsers(dest="problems_command", required=True, metavar="SUBCOMMAND")

    ls = sub.add_parser("list", help="list problems (with --json: metadata, roofline, version)")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    ls.add_argument("--source", default="builtin", help="builtin | DIR | pkb:/path/to/checkout")
    ls.set_defaults(handler=_list)

    ck = sub.add_parser("check", help="run references on CPU/gloo at the small size")
    ck.add_argument("--world-size", type=int, required=True)
    ck.add_argument("--ids", nargs="*", default=None, metavar="ID[,ID...]",
                    help="problem ids, separated by spaces or commas (default: all)")
    ck.add_argument("--source", default="builtin", help="builtin | DIR | pkb:/path/to/checkout")
    ck.set_defaults(handler=_check)

    cov = sub.add_parser("coverage", help="which native problems cover each upstream PKB id (1-87)")
    cov.add_argument("--source", default="builtin", help="builtin | DIR")
    cov.add_argument("--json", action="store_true", help="print the mapping as JSON")
    cov.set_defaults(handler=_coverage)


def problem_summary(problem) -> dict:
    """One problem as JSON-ready metadata (what `list --json` prints)."""
    s = problem.spec
    ws = ROOFLINE_WORLD_SIZE if ROOFLINE_WORLD_SIZE in s.world_sizes else max(s.world_sizes)
    counts = problem.roofline(ws, "bench")
    return {
        "id": s.id, "title": s.title, "category": s.category, "origin": s.origin,
        "parallelism": s.parallelism, "world_sizes": list(s.world_sizes),
        "test_world_sizes": list(s.test_world_sizes), "dtype": s.dtype,
        "atol": s.atol, "rtol": s.rtol, "tolerance_reason": s.tolerance_reason, "sizes": s.sizes,
        "upstream": list(s.upstream), "upstream_partial": list(s.upstream_partial),
        "roofline": dataclasses.asdict(counts) if counts else None,
        "roofline_world_size": ws, "roofline_size": "bench",
        "version": s.version, "source": s.source, "has_expert": problem.expert_source is not None,
        "degenerate": list(problem.degenerate),
    }


def _list(args: argparse.Namespace) -> int:
    from pkb_ray.problems.loader import load_problems

    loaded = load_problems(args.source)
    for err in loaded.errors:
        print(f"error: {err}", file=sys.stderr)
    if args.json:
        print(json.dumps([problem_summary(p) for p in loaded.problems.values()], indent=1))
    else:
        for p in loaded.problems.values():
            s = p.spec
            print(f"{s.id:28s} {s.category:18s} {s.title}")
        print(f"{len(loaded.problems)} problems, {len(loaded.errors)} errors", file=sys.stderr)
    return 1 if loaded.errors else 0


def split_ids(raw: list[str] | None) -> list[str] | None:
    """`--ids a b,c` -> [a, b, c]; None (all problems) when none are given."""
    ids = [i for chunk in raw or [] for i in chunk.split(",") if i.strip()]
    return [i.strip() for i in ids] or None


def _check(args: argparse.Namespace) -> int:
    from pkb_ray.problems.check import check_problems

    t0 = time.perf_counter()
    results = check_problems(args.world_size, source=args.source, ids=split_ids(args.ids))
    for r in results:
        tail = f"  {r.message}" if r.message else ""
        if r.truth == "missing":
            tail += "  (no truth.py: outputs not checked against the un-sharded math)"
        print(f"{r.status:4s} {r.problem:28s} {r.seconds:6.2f}s{tail}", flush=True)
        for w in r.warnings:
            print(f"     warning: {w}", flush=True)
    fails = sum(not r.ok for r in results)
    warned = sum(bool(r.warnings) for r in results)
    print(f"{len(results) - fails}/{len(results)} ok at world size {args.world_size} "
          f"({warned} with warnings) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 1 if fails else 0


def _coverage(args: argparse.Namespace) -> int:
    """Exit 0 when every upstream id is covered and every category has enough problems."""
    from pkb_ray.problems.coverage import UPSTREAM_COUNT, coverage, render
    from pkb_ray.problems.loader import load_problems

    loaded = load_problems(args.source)
    for err in loaded.errors:
        print(f"error: {err}", file=sys.stderr)
    cov = coverage(loaded.problems)
    if args.json:
        print(json.dumps({
            "covered_by": {str(i): cov.covered_by.get(i, []) for i in range(1, UPSTREAM_COUNT + 1)},
            "partial": {str(i): v for i, v in sorted(cov.partial.items())},
            "missing": cov.missing, "per_category": cov.per_category,
            "short_categories": cov.short_categories, "total": cov.total,
        }, indent=1))
    else:
        print(render(cov))
    return 1 if cov.missing or cov.short_categories or loaded.errors else 0
