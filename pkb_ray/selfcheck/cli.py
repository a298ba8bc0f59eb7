"""`pkb problems check --world-size N [--ids a,b ...]`: the suite's self-check, added to the
problems command of pkb_ray/problems/cli.py (which lists and covers the suite)."""

from __future__ import annotations

import argparse
import sys
import time

from pkb_ray.problems import cli as problems_cli


def register(subparsers: argparse._SubParsersAction) -> None:
    """`pkb problems` with every subcommand: list and coverage from problems/cli.py, check here."""
    sub = problems_cli.register(subparsers)
    ck = sub.add_parser("check", help="run references on CPU/gloo at the small size")
    ck.add_argument("--world-size", type=int, required=True)
    ck.add_argument("--ids", nargs="*", default=None, metavar="ID[,ID...]",
                    help="problem ids, separated by spaces or commas (default: all)")
    ck.add_argument("--source", default="builtin", help="builtin | DIR | pkb:/path/to/checkout")
    ck.set_defaults(handler=_check)


def split_ids(raw: list[str] | None) -> list[str] | None:
    """`--ids a b,c` -> [a, b, c]; None (all problems) when none are given."""
    ids = [i for chunk in raw or [] for i in chunk.split(",") if i.strip()]
    return [i.strip() for i in ids] or None


def _check(args: argparse.Namespace) -> int:
    from pkb_ray.selfcheck.check import check_problems

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
