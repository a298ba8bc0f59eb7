"""World sizes for tests (problem.yaml `test_world_sizes`): run when asked for by name, never
by a sweep's default selection.

A one-GPU machine can only run world size 1 (two processes cannot share one GPU as two
ranks: DESIGN.md), so the engine's GPU tests and timing benchmarks run there on the problems
whose computation is defined at one rank. Declaring it must not put those problems into a
sweep at world size 1, must not change their version (cached model responses and recorded
cells are keyed by it), and a problem that does not declare it is refused up front with a
message naming the world sizes it runs at.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pkb_ray.cli import main as pkb
from pkb_ray.driver.plan import at_world_size
from pkb_ray.problems import load_problem, load_problems
from pkb_ray.selfcheck.check import check_problems
from tests.problems.helpers import copy_problem

PROBLEMS = load_problems().problems


def _set_test_world_sizes(d: Path, sizes: list[int] | None) -> None:
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    meta.pop("test_world_sizes", None)
    if sizes is not None:
        meta["test_world_sizes"] = sizes
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))


def test_builtin_declarations():
    declared = sorted(pid for pid, p in PROBLEMS.items() if p.spec.test_world_sizes)
    assert len(declared) >= 95, len(declared)
    for pid in declared:
        assert PROBLEMS[pid].spec.test_world_sizes == (1,), pid
    # not defined at one rank: a pipeline of one stage, a bidirectional pipeline (raises
    # "needs at least two ranks"), experts split over at least 4 ranks
    for pid in ("pipeline_dualpipe_forward", "pipeline_send_recv", "moe_ep_forward_narrow"):
        assert not PROBLEMS[pid].spec.runs_at(1, tests=True), pid


def test_runs_at_and_refusal():
    spec = PROBLEMS["allreduce"].spec
    assert spec.runs_at(2) and spec.runs_at(1, tests=True) and not spec.runs_at(1)
    assert spec.world_size_refusal(1, tests=True) == ""
    assert "only when asked for" in spec.world_size_refusal(1)
    dual = PROBLEMS["pipeline_dualpipe_forward"].spec
    msg = dual.world_size_refusal(1, tests=True)
    assert "'pipeline_dualpipe_forward' is not defined at world size 1" in msg and "[2, 4, 8]" in msg


def test_sweep_selection_leaves_test_world_sizes_out():
    kept, note = at_world_size(PROBLEMS, 1)
    assert kept == {} and note and "allreduce" in note
    kept, _ = at_world_size(PROBLEMS, 2)
    assert "allreduce" in kept


def test_declaring_test_world_sizes_keeps_the_version(tmp_path):
    d = copy_problem(tmp_path, "p")
    _set_test_world_sizes(d, None)
    before = load_problem(str(tmp_path), "p").spec.version
    for form in ("test_world_sizes: [1]\n", "test_world_sizes:\n- 1\n"):
        (d / "problem.yaml").write_text((d / "problem.yaml").read_text() + form)
        p = load_problem(str(tmp_path), "p")
        assert p.spec.test_world_sizes == (1,)
        assert p.spec.version == before, form
        _set_test_world_sizes(d, None)
    # what does change a result still changes the version
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    meta["world_sizes"] = [2, 4]
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))
    assert load_problem(str(tmp_path), "p").spec.version != before


def test_check_at_world_size_1_runs_declared_problems_only(tmp_path):
    _set_test_world_sizes(copy_problem(tmp_path, "declares_one"), [1])
    _set_test_world_sizes(copy_problem(tmp_path, "swept_only"), None)
    results = {r.problem: r for r in check_problems(1, source=str(tmp_path))}
    assert results["declares_one"].status == "ok", results["declares_one"].message
    assert results["declares_one"].truth == "matched"  # real rank process, against truth.py
    assert results["swept_only"].status == "skip"
    assert "not defined at world size 1" in results["swept_only"].message


def test_pkb_eval_refuses_a_problem_not_defined_at_world_size_1(capsys):
    ref = PROBLEMS["pipeline_dualpipe_forward"].spec.directory / "reference.py"
    rc = pkb(["eval", "pipeline_dualpipe_forward", str(ref), "--world-size", "1", "--device", "cpu"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "pipeline_dualpipe_forward" in err and "not defined at world size 1" in err
