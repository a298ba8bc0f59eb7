"""Problems whose arguments hold more than tensors, and references that answer in place, as
upstream PKB has them (process groups in 21, 22 and 55-57, nn.Linear layers in 31, 32 and
49-51, gradients clipped in place in 21 and 22): real judges and sandboxed workers on CPU at
world size 2, on the clip_in_group fixture (all three at once)."""

from __future__ import annotations

import pytest
import torch

from pkb_ray.engine import evaluate
from pkb_ray.engine.judge import inputs as inp
from pkb_ray.records import FailureClass

from .conftest import ADVERSARIAL, CANDIDATES, FIXTURE_PROBLEMS, LOADER, request_for

REFERENCE = FIXTURE_PROBLEMS / "clip_in_group" / "reference.py"


def _eval(path, cache_dir, **kw):
    return evaluate(request_for(path, cache_dir, problem_id="clip_in_group", **kw), load_problem=LOADER)


def test_the_reference_against_itself_gets_its_group_its_layer_and_writes_checked(cache_dir):
    # the reference's worker makes the judge's subgroup of its own (NCCL or gloo, unguarded)
    res = _eval(REFERENCE, cache_dir, guard=False, time_candidates=False)  # correctness is the point
    assert res.correct, (res.failure, res.message, res.log[-3000:])


def test_a_guarded_candidate_gets_a_group_of_its_own_ranks_and_the_layer(cache_dir):
    res = _eval(CANDIDATES / "clip_in_group_local.py", cache_dir, time_candidates=False)
    assert res.correct, (res.failure, res.message, res.log[-3000:])


def test_a_candidate_that_skips_the_in_place_answer_is_incorrect(cache_dir):
    res = _eval(ADVERSARIAL / "skips_in_place_answer.py", cache_dir)
    assert res.failure == FailureClass.INCORRECT, (res.failure, res.message, res.log[-3000:])
    assert "differ from what the reference leaves in them (it writes 2 of them in place)" in res.message


def test_a_reference_that_steps_the_layer_it_is_handed_steps_a_copy(cache_dir):
    # the reference runs in the judge: on the golden layer itself, its write hid there and an
    # honest step read as a changed input
    assert evaluate(request_for(CANDIDATES / "sgd_linear_step.py", cache_dir, problem_id="sgd_linear",
                                time_candidates=False), load_problem=LOADER).correct
    res = evaluate(request_for(ADVERSARIAL / "skips_layer_update.py", cache_dir, problem_id="sgd_linear"),
                   load_problem=LOADER)
    assert res.failure == FailureClass.INCORRECT, (res.failure, res.message)
    assert "differ from what the reference leaves in them (it writes 1 of them in place)" in res.message


def test_arguments_the_reference_never_writes_stay_checked_in_every_timed_call(cache_dir):
    res = _eval(ADVERSARIAL / "scribbles_when_timed.py", cache_dir)
    assert res.failure == FailureClass.INCORRECT, (res.failure, res.message)
    assert "timed call" in res.message and "modified its input" in res.message, res.message


def test_integers_are_exact_within_any_tolerance(cache_dir):
    # count_in_place keeps upstream's 1e-2 tolerance: its own reference is correct... (both
    # all-reduce through torch.distributed on CPU: unguarded, the comparison is the point)
    ref = FIXTURE_PROBLEMS / "count_in_place" / "reference.py"
    res = evaluate(request_for(ref, cache_dir, problem_id="count_in_place", guard=False, time_candidates=False),
                   load_problem=LOADER)
    assert res.correct, (res.failure, res.message, res.log[-3000:])
    # ...and totals rounded through float16, off by a few in 8000, are not
    res = evaluate(request_for(ADVERSARIAL / "counts_in_half.py", cache_dir, problem_id="count_in_place",
                               guard=False, time_candidates=False), load_problem=LOADER)
    assert res.failure == FailureClass.INCORRECT, (res.failure, res.message)
    assert "integers (torch.int64, compared exactly) differ" in res.message, res.message


def test_an_integer_argument_written_in_place_must_be_exact():
    gold = torch.arange(1000, 1008)
    after = gold + 5  # what the reference leaves there
    view = after.clone()
    view[3] += 1  # within 1e-2 of 1008: a float rule passes it
    placed = inp.Placed(None, [(view, gold)])
    why = placed.not_as_written(inp.Written((after,)), atol=1e-2, rtol=1e-2)
    assert why.startswith("1 of its input tensor(s) differ from what the reference leaves"), why
    view[3] -= 1
    assert placed.not_as_written(inp.Written((after,)), atol=1e-2, rtol=1e-2) == ""


@pytest.mark.parametrize("change", ["append", "replace_shape", "new_key", "number"])
def test_a_reference_that_changes_its_arguments_structure_is_refused(change):
    before = ([torch.zeros(3), torch.ones(2)], {"w": torch.zeros(4)}, 7)
    after = inp.clone(before)
    if change == "append":
        after[0].append(torch.zeros(1))
    elif change == "replace_shape":
        after[0][0] = torch.zeros(4)
    elif change == "new_key":
        after[1]["b"] = torch.zeros(1)
    else:
        after = (after[0], after[1], 8)
    with pytest.raises(ValueError, match="changes the structure of its arguments"):
        inp.written_by(before, after, inp.handed(after))
    same = inp.clone(before)
    same[0][1].mul_(2)  # values in place: allowed, and found
    assert inp.written_by(before, same, inp.handed(same)).leaves == {1}


def test_a_rebound_list_item_is_not_a_write():
    before = ([torch.ones(3), torch.ones(2)],)
    after = inp.clone(before)
    handed = inp.handed(after)
    after[0][0] = after[0][0] * 2  # a new tensor in the list; the one handed over is as it was
    assert inp.written_by(before, after, handed).leaves == frozenset()
    after[0][1].mul_(2)  # written in place: found
    assert inp.written_by(before, after, handed).leaves == {1}


def test_a_reference_that_rebinds_a_list_item_is_correct_against_itself_and_a_write_is_not(cache_dir):
    """rebind_item's reference rebinds xs[0]: the worker's list never reaches the judge, and
    the tensors it was handed stay as they were. Read as a write, the reference failed
    against itself ("1 of its input tensor(s) differ from what the reference leaves")."""
    ref = FIXTURE_PROBLEMS / "rebind_item" / "reference.py"
    res = evaluate(request_for(ref, cache_dir, problem_id="rebind_item", trials=1, time_candidates=False),
                   load_problem=LOADER)
    assert res.correct, (res.failure, res.message, res.log[-2000:])
    res = evaluate(request_for(CANDIDATES / "rebind_item_in_place.py", cache_dir, problem_id="rebind_item",
                               trials=1, time_candidates=False), load_problem=LOADER)
    assert res.failure == FailureClass.INCORRECT and "input tensor(s)" in res.message, res.message


def test_an_expanded_argument_is_placed_as_it_is(cache_dir):
    """A stride-0 argument (`row.expand(8, n)`): copy_ refuses to write a tensor whose
    elements share memory, and placing it was a harness error in the calibration."""
    from pkb_ray.engine.wire.arena import fill

    row = torch.arange(4.0)
    src = row.expand(3, 4)
    dst = torch.zeros(4).as_strided((3, 4), (0, 1))
    fill(dst, src)
    assert torch.equal(dst, src) and dst.stride() == (0, 1)
    ref = FIXTURE_PROBLEMS / "expanded_bias" / "reference.py"
    res = evaluate(request_for(ref, cache_dir, problem_id="expanded_bias", trials=1),
                   load_problem=LOADER)
    assert res.correct and res.timing is not None and res.timing.samples > 0, (res.failure, res.message)


def test_no_figure_against_a_reference_that_makes_groups_in_every_call(cache_dir):
    # upstream 48 makes its groups inside solution(): 931 ms a call of NCCL set-up at ws 2,
    # and 2.33 [1.62, 3.06] against itself
    ref = FIXTURE_PROBLEMS / "groups_per_call" / "reference.py"
    res = evaluate(request_for(ref, cache_dir, problem_id="groups_per_call", guard=False, trials=2),
                   load_problem=LOADER)
    assert res.correct and res.speedup is None, (res.failure, res.message, res.log[-3000:])
    assert res.timing.unmeasurable_kind == "reference_makes_groups", res.timing
    assert "makes new process groups in every call" in res.message
    # a reference that makes its group once and keeps it (clip_in_group) is timed
    res = _eval(REFERENCE, cache_dir, guard=False, trials=2)
    assert res.correct and res.timing.unmeasurable_kind != "reference_makes_groups", (res.message, res.timing)
