"""A simulation (no GPU): how often the node's pace pairing (engine/node/paces.py) hands an
evaluation two workers whose paces agree, by how many spares it keeps of each kind.

    python scripts/pace_pairing_sim.py RESULTS.json [RESULTS.json ...] [--every-s 3.7] [--setup-s 5.5]

Draws each simulated worker's pace per rank from the paces that real workers recorded
(`context_pace_us` in self_timing.py or bench_eval.py results), starts a replacement spare
whenever one is taken, and lets a spare answer only once it is set up (`--setup-s` after its
start; an evaluation every `--every-s`). Each evaluation chooses with paces.choose, as the
node does. Prints the share of evaluations with a matched pair and the mean wait for a spare
still setting up, per world size and number of spares.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pkb_ray.engine.node import paces

DEPTHS = [(2, 2), (2, 3), (2, 4), (3, 3), (3, 4), (4, 4)]


def recorded_paces(paths: list[Path]) -> list[float]:
    """Every worker's pace (us) in the results: self-timing rows or bench_eval shapes."""
    timings = []
    for path in paths:
        data = json.loads(path.read_text())
        for row in data.get("rows", []):
            timings += [e.get("timing") or {} for e in row.get("evals", [])]
        for shape in data.get("shapes", []):
            timings += [r.get("timing") or {} for r in shape["runs"]]
    return [p for t in timings for pair in (t.get("context_pace_us") or []) for p in pair if p]


def simulate(pool: list[float], cands: int, refs: int, world_size: int, every_s: float, setup_s: float,
             evaluations: int = 4000, seed: int = 0) -> tuple[float, float]:
    """(share of evaluations matched, mean seconds waited for a spare to be set up)."""
    rnd = random.Random(seed)

    def spare(t: float) -> tuple[float, list[float]]:
        return t + setup_s, [rnd.choice(pool) for _ in range(world_size)]

    c_q = [spare(-setup_s) for _ in range(cands)]
    r_q = [spare(-setup_s) for _ in range(refs)]
    t = matched = 0.0
    waited = 0.0
    for _ in range(evaluations):
        known_c = [p if ready <= t else None for ready, p in c_q]
        known_r = [p if ready <= t else None for ready, p in r_q]
        i, j = paces.choose(known_c, known_r)
        apart = paces.cost(known_c[i], known_r[j])
        matched += apart is not None and apart <= paces.TOLERANCE
        wait = max(c_q[i][0] - t, r_q[j][0] - t, 0.0)
        waited += wait
        t += wait
        c_q.pop(i)
        r_q.pop(j)
        c_q.append(spare(t))
        r_q.append(spare(t))
        t += every_s
    return matched / evaluations, waited / evaluations


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--every-s", type=float, default=3.7, help="seconds between evaluations")
    ap.add_argument("--setup-s", type=float, default=5.5, help="seconds a spare takes to set up")
    ap.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4])
    args = ap.parse_args(argv)
    pool = recorded_paces(args.results)
    if len(pool) < 10:
        print(f"only {len(pool)} recorded paces in the results given: too few to draw from", file=sys.stderr)
        return 2
    table = Table(title=f"SIMULATION over {len(pool)} recorded paces: matched share (mean wait s)")
    table.add_column("candidate spares / reference spares")
    for ws in args.world_sizes:
        table.add_column(f"ws {ws}", justify="right")
    for cands, refs in DEPTHS:
        cells = []
        for ws in args.world_sizes:
            share, wait = simulate(pool, cands, refs, ws, args.every_s, args.setup_s)
            cells.append(f"{share:.0%} ({wait:.2f})")
        table.add_row(f"{cands} / {refs}", *cells)
    Console(width=140).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
