"""`pkb problems list [--json]` and `pkb problems coverage`. (`pkb problems check` runs the
references in rank processes: pkb_ray/selfcheck/cli.py adds it to this command.)"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

ROOFLINE_WORLD_SIZE = 8


def register(subparsers) -> argparse._SubParsersAction:
    """Adds `pkb problems`; returns its subcommands, for selfcheck/cli.py to add `check`."""
    p = subparsers.add_parser("problems", help="list and check the problem suite")
    sub = p.add_subparsers(dest="problems_command", required=True, metavar="SUBCOMMAND")

    ls = sub.add_parser("list", help="list problems (with --json: metadata, roofline, version)")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    ls.add_argument("--source", default="builtin", help="builtin | DIR | pkb:/path/to/checkout")
    ls.set_defaults(handler=_list)

    cov = sub.add_parser("coverage", help="which native problems cover each upstream PKB id (1-87)")
    cov.add_argument("--source", default="builtin", help="builtin | DIR")
    cov.add_argument("--json", action="store_true", help="print the mapping as JSON")
    cov.set_defaults(handler=_coverage)
    return sub


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
        from pkb_ray.console import Listing, print_listing

        by_category: dict[str, list] = {}
        for p in loaded.problems.values():
            by_category.setdefault(p.spec.category, []).append(p.spec)
        rows = []
        for category, specs in sorted(by_category.items()):  # a heading per category: titles get the room
            rows.append({"id": f"{category} ({len(specs)})", "title": ""})
            rows += [{"id": f"  {s.id}", "title": s.title} for s in specs]
        print_listing(Listing(rows, priority=("id", "title"), wrappable=("title",)))
        print(f"{len(loaded.problems)} problems, {len(loaded.errors)} errors", file=sys.stderr)
    return 1 if loaded.errors else 0


def _coverage(args: argparse.Namespace) -> int:
    """Exit 0 when every upstream id is covered and every category has enough problems."""
    from pkb_ray.console import Listing, print_listing, terminal_width, wrap
    from pkb_ray.problems.coverage import UPSTREAM_COUNT, coverage, rows, summary
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
        print_listing(Listing(rows(cov), priority=("id", "upstream", "covered by"), right=("id",),
                              wrappable=("covered by",)))
        print()
        print("\n".join(wrap(line, width=terminal_width()) for line in summary(cov)))
    return 1 if cov.missing or cov.short_categories or loaded.errors else 0
