"""scripts/bench_groups_gpu.py's arithmetic, on made-up rows: the rule that says a neighbour
moved a problem's figure, how busy the other groups were, and the budget."""

from __future__ import annotations

import math
import random
import runpy
from pathlib import Path

import pytest

BENCH = runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "bench_groups_gpu.py"))


def _runs(speedups, rel_half=0.02, **extra):
    return [{"correct": True, "speedup": s, "ci": [s * math.exp(-rel_half), s * math.exp(rel_half)], "gpus": "0,1",
             **extra} for s in speedups]


def test_a_grouped_median_beyond_the_widened_exclusive_range_is_moved():
    compare = BENCH["compare"]
    alone = _runs([1.07, 1.08, 1.075])
    same = compare(alone, _runs([1.06, 1.09, 1.07], busy_share=1.0), 0.012)
    assert same["verdict"] == "within" and same["band"] == [pytest.approx(1.07 * math.exp(-0.02), abs=1e-4),
                                                            pytest.approx(1.08 * math.exp(0.02), abs=1e-4)]
    assert compare(alone, _runs([1.15, 1.16, 1.17], busy_share=1.0), 0.012)["verdict"] == "moved"
    # Neighbours idle for most of the grouped runs: not a grouped figure.
    assert compare(alone, _runs([1.15, 1.16, 1.17], busy_share=0.5), 0.012)["verdict"] == "unmeasured"
    assert compare(alone[:1], _runs([1.07, 1.08], busy_share=1.0), 0.012)["verdict"] == "unmeasured"


def test_the_rule_seldom_flags_a_problem_no_neighbour_moved():
    """Runs drawn alike on both sides, each interval's half-width 1.96 sd: the rule's own
    claim (compare's docstring) is under 1% flagged; the plain range would flag 40%."""
    compare, rng = BENCH["compare"], random.Random(0)
    sd, flagged = 0.015, 0
    for _ in range(2000):
        draw = [math.exp(rng.gauss(0, sd)) for _ in range(6)]
        res = compare(_runs(draw[:3], 1.96 * sd), _runs(draw[3:], 1.96 * sd, busy_share=1.0), 0.012)
        flagged += res["verdict"] == "moved"
    assert flagged / 2000 < 0.015


def test_busy_share_is_the_least_busy_neighbours():
    busy_share = BENCH["busy_share"]
    row = {"stream": 0, "t_start": 10.0, "t_end": 20.0}
    block = [row, {"stream": 1, "t_start": 5.0, "t_end": 15.0}, {"stream": 1, "t_start": 15.5, "t_end": 30.0},
             {"stream": 2, "t_start": 0.0, "t_end": 18.0}]
    assert busy_share(row, block) == pytest.approx(0.8)  # stream 2 held 8 of the 10 s
    assert busy_share(row, [row]) == 0.0
