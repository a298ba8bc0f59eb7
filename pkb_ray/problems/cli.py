"""`pkb problems list [--json]` and `pkb problems check --world-size N [--ids ...]`."""

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
    ck.add_argument("--ids", nargs="*", default=None, help="problem ids (default: all)")
    ck.add_argument("--source", default="builtin", help="builtin | DIR | pkb:/path/to/checkout")
    ck.set_defaults(handler=_check)


def problem_summary(problem) -> dict:
    """One problem as JSON-ready metadata (what `list --json` prints)."""
    s = problem.spec
    ws = ROOFLINE_WORLD_SIZE if ROOFLINE_WORLD_SIZE in s.world_sizes else max(s.world_sizes)
    counts = problem.roofline(ws, "bench")
    return {
        "id": s.id, "title": s.title, "category": s.category, "origin": s.origin,
        "parallelism": s.parallelism, "world_sizes": list(s.world_sizes), "dtype": s.dtype,
        "atol": s.atol, "rtol": s.rtol, "sizes": s.sizes,
        "roofline": dataclasses.asdict(counts) if counts else None,
        "roofline_world_size": ws, "roofline_size": "bench",
        "version": s.version, "source": s.source, "has_expert": problem.expert_source is not None,
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


def _check(args: argparse.Namespace) -> int:
    from pkb_ray.problems.check import check_problems

    t0 = time.perf_counter()
    results = check_problems(args.world_size, source=args.source, ids=args.ids or None)
    for r in results:
        tail = f"  {r.message}" if r.message else ""
        print(f"{r.status:4s} {r.problem:28s} {r.seconds:6.2f}s{tail}", flush=True)
    fails = sum(not r.ok for r in results)
    print(f"{len(results) - fails}/{len(results)} ok at world size {args.world_size} "
          f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 1 if fails else 0
