"""Do repeated evaluations of one candidate get intervals that agree? Fits the per-call part
of the spread between evaluations (timing_stats.LAUNCH_SD_US) on bench_eval results.

    python scripts/between_repeats.py RESULTS.json [RESULTS.json ...] [--hold-out RESULTS.json ...]
        [--out DIR --tag T]

Each bench_eval result holds a few evaluations of the same candidate at each shape (a set).
For a grid of per-call spreads s (microseconds), each evaluation's interval is taken back to
what its samples gave (its recorded `between_sd` undone) and widened as the verdict would
with s (timing_stats.between_sd); the script counts, over every set:
- pairs of evaluations of one set whose intervals overlap (issue 37 asks for 95%);
- intervals holding their set's geometric mean, the nearest thing to the truth a set has.

It prints the smallest s on the grid where both reach --coverage: on the fitted results and,
with --hold-out, on results it was not fitted on as well (a spread fitted to the sets it
judges holds them by construction). --out writes the table (.md) and the figures (.json).

Why a second script beside between_evaluations.py: that one fits the spread on references
timed against themselves, where whatever the harness adds to a call's time is the same on
both halves and cancels in their ratio. Here the candidate differs from the reference, so a
per-call cost the floor missed does not cancel, and matters most where a call is a few
microseconds (the allreduce expert at 1024x1024, world size 1: 6 us a reference call).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pkb_ray.engine.node.timing_stats import between_sd, unwidened_bounds, widened_bounds

GRID_US = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5]


def sets(paths: list[Path]) -> list[dict]:
    """Per (file, shape): its device, world size and evaluations (point, low, high, reference
    ms, candidate ms), intervals unwidened."""
    out = []
    for path in paths:
        data = json.loads(path.read_text())
        for shape in data["shapes"]:
            evals = []
            for run in shape["runs"]:
                lo_hi = run.get("speedup_ci") or [None, None]
                if not run.get("speedup") or not lo_hi[0] or not lo_hi[1]:
                    continue
                recorded = (run.get("timing") or {}).get("between_sd") or 0.0
                lo, hi = unwidened_bounds(run["speedup"], lo_hi[0], lo_hi[1], recorded)
                evals.append((run["speedup"], lo, hi, run["reference_ms"], run["candidate_ms"]))
            if len(evals) >= 2:
                out.append({"name": f"{path.name} {shape['shape']}", "device": data["device"],
                            "world_size": data["world_size"], "evals": evals})
    return out


def score(groups: list[dict], per_call_us: float) -> tuple[float, float, int, int]:
    """(share of pairs overlapping, share of intervals holding their set's geomean, pairs,
    intervals) with this per-call spread."""
    overlap = pairs = hold = total = 0
    for g in groups:
        widened = []
        for point, lo, hi, ref_ms, cand_ms in g["evals"]:
            sd = between_sd(g["device"], g["world_size"], ref_ms, cand_ms, per_call_us=per_call_us)
            widened.append((point, *widened_bounds(point, lo, hi, sd)))
        centre = math.exp(sum(math.log(p) for p, _, _ in widened) / len(widened))
        hold += sum(lo <= centre <= hi for _, lo, hi in widened)
        total += len(widened)
        for (_, a_lo, a_hi), (_, b_lo, b_hi) in itertools.combinations(widened, 2):
            pairs += 1
            overlap += a_lo <= b_hi and b_lo <= a_hi
    return overlap / max(1, pairs), hold / max(1, total), pairs, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--hold-out", nargs="*", type=Path, default=[])
    ap.add_argument("--coverage", type=float, default=0.95)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tag", default="")
    args = ap.parse_args(argv)
    fit, held = sets(args.results), sets(args.hold_out)
    if not fit:
        print("no set with two or more evaluations with intervals in the results given", file=sys.stderr)
        return 2
    table = Table(title=f"{len(fit)} sets fitted" + (f", {len(held)} held out" if held else ""))
    for col in ("per-call spread (us)", "pairs overlapping", "hold the set's geomean") + (
            ("held out: overlapping", "held out: hold geomean") if held else ()):
        table.add_column(col, justify="right")
    chosen = None
    lines, grid = [], []
    for s in GRID_US:
        shares = score(fit, s)
        cells = [f"{s:.2f}", f"{shares[0]:.1%} of {shares[2]}", f"{shares[1]:.1%} of {shares[3]}"]
        row = {"per_call_us": s, "overlapping": shares[0], "holding": shares[1]}
        if held:
            hshares = score(held, s)
            cells += [f"{hshares[0]:.1%} of {hshares[2]}", f"{hshares[1]:.1%} of {hshares[3]}"]
            row.update(held_overlapping=hshares[0], held_holding=hshares[1])
        table.add_row(*cells)
        lines.append("| " + " | ".join(cells) + " |")
        grid.append(row)
        if chosen is None and all(v >= args.coverage for k, v in row.items() if k != "per_call_us"):
            chosen = s
    console = Console(width=160)
    console.print(table)
    verdict = (f"smallest per-call spread holding {args.coverage:.0%} of every count: {chosen} us" if chosen is not None
               else f"no per-call spread on the grid holds {args.coverage:.0%} of every count")
    print(verdict)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        head = ["per-call spread (us)", "pairs overlapping", "hold the set's geomean"] + (
            ["held out: overlapping", "held out: hold geomean"] if held else [])
        md = [f"# between_repeats{args.tag}", "",
              "Command: `python scripts/between_repeats.py " + " ".join(sys.argv[1:]) + "`", "",
              "Fitted on: " + ", ".join(g["name"] for g in fit), ""]
        if held:
            md += ["Held out: " + ", ".join(g["name"] for g in held), ""]
        md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *lines, "", verdict, ""]
        (args.out / f"between_repeats{args.tag}.md").write_text("\n".join(md))
        (args.out / f"between_repeats{args.tag}.json").write_text(json.dumps(
            {"results": [str(p) for p in args.results], "hold_out": [str(p) for p in args.hold_out],
             "coverage": args.coverage, "grid": grid, "chosen": chosen}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
