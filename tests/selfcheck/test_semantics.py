"""Every builtin reference holds to the contract and computes what its truth.py says.

One `check_problems` pass per world size (1, 2 and 4; at 1 the problems that declare it in
test_world_sizes) runs every problem in ONE group of real
gloo rank processes (pkb_ray/selfcheck/ranks.py) and compares every rank's output with the
problem's truth.py: the un-sharded math done in one process on all ranks' inputs. A model
reads the description and the reference: if they disagree with the truth, every candidate
is judged against the wrong thing.
"""

from __future__ import annotations

import pytest

from pkb_ray.problems import load_problems
from pkb_ray.selfcheck.check import check_problems
from pkb_ray.selfcheck.truth import truth_path

PROBLEMS = load_problems().problems

TRUTH_EXEMPT: dict[str, str] = {}
"""Problem id -> why it has no truth.py. Empty: every builtin problem has one."""


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda w: f"world{w}")
def checked(request):
    w = request.param
    return w, {r.problem: r for r in check_problems(w)}


@pytest.mark.slow  # every problem in real rank processes at world sizes 1, 2 and 4
@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_reference_matches_truth(checked, pid):
    w, results = checked
    r = results[pid]
    if r.status == "skip":
        pytest.skip(r.message)
    assert r.status == "ok", f"{pid} at world size {w}: {r.message}"
    assert not r.warnings, r.warnings  # warnings are for upstream problems only
    if pid not in TRUTH_EXEMPT:
        assert r.truth == "matched", f"{pid}: truth {r.truth!r}"


@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_every_problem_has_truth(pid):
    has = truth_path(PROBLEMS[pid]) is not None
    if pid in TRUTH_EXEMPT:
        assert not has, f"{pid} has a truth.py now: remove it from TRUTH_EXEMPT"
    else:
        assert has, f"problems/{pid}/truth.py is missing (or list {pid} in TRUTH_EXEMPT with the reason)"


def test_each_world_size_is_checked_somewhere():
    # a problem skipped at both 2 and 4 would never be run in CI
    for pid, p in PROBLEMS.items():
        assert {2, 4} & set(p.spec.world_sizes), pid
