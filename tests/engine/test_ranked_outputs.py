"""Top-k outputs (ProblemSpec.ranked_outputs): ids compared up to ties of their values.

An honest kernel that accumulates a similarity in another order breaks near-ties its own
way; compared exactly, its labels failed (upstream 79 at its bench size on CPU: 4806 of
6400 labels differed for a K-split matmul, every value within a bfloat16 step)."""

from __future__ import annotations

import importlib.util

import torch

from pkb_ray.engine import evaluate
from pkb_ray.engine.judge.comparator import compare
from pkb_ray.records import FailureClass

from .conftest import CANDIDATES, FIXTURE_PROBLEMS, LOADER, request_for


def _ranked(o_vals, o_ids, r_vals, r_ids):
    return compare((o_vals, o_ids), (r_vals, r_ids), 1e-2, 1e-2, ranked=[(0, 1)])


def test_ids_may_swap_within_ties_and_at_the_cut_and_nowhere_else():
    r_vals = torch.tensor([[0.9, 0.8, 0.8, 0.5, 0.3, 0.3]])
    r_ids = torch.tensor([[7, 3, 4, 9, 1, 2]])
    same = r_vals.clone()
    assert _ranked(same, torch.tensor([[7, 4, 3, 9, 1, 2]]), r_vals, r_ids).ok  # an exact tie, swapped
    assert _ranked(same, torch.tensor([[7, 3, 4, 9, 2, 5]]), r_vals, r_ids).ok  # the cut: 5 ties with 1, 2
    wrong = _ranked(same, torch.tensor([[7, 3, 4, 8, 1, 2]]), r_vals, r_ids)
    assert not wrong.ok and wrong.failure == FailureClass.INCORRECT
    assert "output 1: 1 of 6 ids differ beyond ties of output 0's values; first at index (0, 3)" in wrong.message
    assert not _ranked(same, torch.tensor([[3, 7, 4, 9, 1, 2]]), r_vals, r_ids).ok  # 0.9 and 0.8 do not tie
    # Values a little off widen the ties by as much, no more: 0.9 and 0.8 are 0.1 apart.
    off = r_vals.clone()
    off[0, 0] = 0.895
    assert not _ranked(off, torch.tensor([[3, 7, 4, 9, 1, 2]]), r_vals, r_ids).ok
    # Values out of tolerance fail as values, before any id is looked at.
    far = _ranked(r_vals + 0.05, r_ids.clone(), r_vals, r_ids)
    assert not far.ok and far.message.startswith("output 0:")
    # Equal infinities tie (their gap is NaN); a top-1's id is compared exactly.
    inf_vals = torch.tensor([[float("inf"), float("inf"), 0.5, 0.1]])
    assert _ranked(inf_vals.clone(), torch.tensor([[2, 1, 7, 8]]), inf_vals, torch.tensor([[1, 2, 7, 8]])).ok
    assert not _ranked(r_vals[:, :1].clone(), torch.tensor([[3]]), r_vals[:, :1], r_ids[:, :1]).ok
    # Ties are measured from each position, never chained: in a dense row every neighbour is
    # within reach of the next, and a chain made the whole row the free run at the cut.
    dense = torch.linspace(1.0, 0.8, 21)[None]
    nudged = dense.clone()
    nudged[0, -1] += 0.006  # within tolerance: reach 0.012, the top 0.2 above the cut
    assert not _ranked(nudged, torch.full((1, 21), 999), dense, torch.arange(21)[None]).ok
    # Two items whose errors mirror each other swap with no difference to see: a step of the
    # values' dtype is a tie.
    mirrored = torch.tensor([[0.5, 0.498046875, 0.3]], dtype=torch.bfloat16)
    assert _ranked(mirrored.clone(), torch.tensor([[22, 11, 33]]), mirrored, torch.tensor([[11, 22, 33]])).ok
    # A declaration the reference's outputs do not fit is ignored, never an exception.
    assert compare((same, r_ids), (r_vals, r_ids), 1e-2, 1e-2, ranked=[(0, 5)]).ok
    assert compare(([0.9, 0.8], [1, 2]), ([0.9, 0.8], [1, 2]), 1e-2, 1e-2, ranked=[(0, 1)]).ok
    # Without ranked_outputs, integers stay exact.
    assert not compare((same, torch.tensor([[7, 4, 3, 9, 1, 2]])), (r_vals, r_ids), 1e-2, 1e-2).ok


def test_a_k_split_similarity_differs_in_labels_only_where_values_tie():
    """The fixture's honest candidate, by hand at one rank: its labels differ from the
    reference's at dozens of places (exact comparison fails) and the ranked rule passes."""
    spec = importlib.util.spec_from_file_location("ranked_inputs", FIXTURE_PROBLEMS / "ranked_labels" / "inputs.py")
    inputs = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(inputs)
    size = {"queries": 16, "items": 512, "dim": 64, "k": 24}
    for seed in (1, 2, 3):
        q, items, labels, k = inputs.make_inputs(0, 1, seed, size)
        h = q.shape[1] // 2
        ref_vals, ref_pos = (q @ items.t()).float().topk(k, dim=1)
        got_vals, got_pos = (q[:, :h] @ items[:, :h].t() + q[:, h:] @ items[:, h:].t()).float().topk(k, dim=1)
        assert int((labels[ref_pos] != labels[got_pos]).sum()) > 10
        assert not compare((got_vals, labels[got_pos]), (ref_vals, labels[ref_pos]), 1e-2, 1e-2).ok
        assert compare((got_vals, labels[got_pos]), (ref_vals, labels[ref_pos]), 1e-2, 1e-2, ranked=[(0, 1)]).ok


def test_the_judge_takes_an_honest_top_k_and_refuses_wrong_labels(cache_dir):
    """Real ranks at world size 2: the problem's ranked_outputs reach the judge's comparison.
    Guard off: the candidates exchange by torch.distributed, as the reference does."""
    def run(name: str):
        return evaluate(request_for(CANDIDATES / name, cache_dir, problem_id="ranked_labels", trials=2,
                                    time_candidates=False, source_guard=False), load_problem=LOADER)

    honest = run("ranked_labels_split.py")
    assert honest.correct, (honest.failure, honest.message)
    wrong = run("ranked_labels_off_by_one.py")
    assert not wrong.correct and wrong.failure == FailureClass.INCORRECT, (wrong.failure, wrong.message)
    assert "ids differ beyond ties of output 0's values" in wrong.message, wrong.message
