"""Argument trees, the memory estimate and the coverage table, on real problems (no ranks)."""

from __future__ import annotations

import pytest
import torch
import yaml

from pkb_ray.problems import ProblemLoadError, load_problem, load_problems
from pkb_ray.problems import args as tree
from pkb_ray.problems.coverage import coverage, rows, summary
from pkb_ray.problems.memory import ProblemTooLarge, estimate_inputs, require_fits
from tests.problems.helpers import copy_problem


def test_leaves_clone_and_difference_walk_nested_arguments():
    x = torch.arange(6.0).reshape(2, 3)
    args = ([x, None], {"k": 3, "w": x * 2, "s": "mean"}, 1.5, True)
    assert [p for p, _ in tree.leaves(args)] == ["[0][0]", "[0][1]", "[1]['k']", "[1]['w']", "[1]['s']", "[2]", "[3]"]
    copy = tree.clone(args)
    assert copy[0][0] is not x and tree.first_difference(args, copy) is None
    copy[1]["w"][0, 0] = -1
    assert tree.first_difference(args, copy) == "[1]['w']: values differ"
    assert tree.first_difference((1, "a"), (1, "b")) == "[1]: 'a' vs 'b'"
    assert tree.first_difference([float("nan")], [float("nan")]) is None
    assert tree.native_type_errors(args) == []
    bad = tree.native_type_errors(({1, 2}, {3: x}, torch.Size([2]), x.to_sparse()))
    assert [e.split(":")[0] for e in bad] == ["[0]", "[1]", "[2]", "[3]"]


def test_degeneracy_names_constant_fills_and_seed_independence():
    x = torch.randn(4, 4)
    assert tree.degeneracy((x, 0), (x + 1, 0)) == []
    ones = torch.ones(4, 4)
    assert tree.degeneracy((ones, 0), (ones.clone(), 0)) == [
        "two seeds gave identical inputs", "every input tensor is a constant fill"]
    assert tree.degeneracy((ones, torch.tensor([True, False])), (ones * 2, torch.tensor([True, False]))) == [
        "every input tensor is a constant fill"]


def test_memory_estimate_allocates_nothing_and_refuses_what_cannot_fit():
    p = load_problem("builtin", "allreduce")
    rows, cols = p.spec.sizes["bench"]["rows"], p.spec.sizes["bench"]["cols"]
    est = estimate_inputs(p, 0, 8, "bench")
    assert (est.input_bytes_per_rank, est.method) == (rows * cols * 2, "fake")
    assert require_fits(p, 0, 8, "bench", 10 * 2**30, "GPU") == est
    with pytest.raises(ProblemTooLarge, match=r"refused: allreduce at size 'bench'.*more than the 0.06 GiB GPU"):
        require_fits(p, 0, 8, "bench", 64 * 2**20, "GPU")


def test_every_builtin_bench_size_fits_the_contract():
    # PROBLEMS_V2: bench inputs stay under ~4 GiB per rank (at the largest world size)
    for pid, p in load_problems().problems.items():
        est = estimate_inputs(p, 0, max(p.spec.world_sizes), "bench")
        if est.input_bytes_per_rank is not None:
            assert est.input_bytes_per_rank <= 4.5 * 2**30, (pid, est)


def test_coverage_counts_only_same_computation(tmp_path):
    for pid, up, part in (("p_one", [1, 2], []), ("p_two", [2], [3]), ("p_three", [], [3])):
        d = copy_problem(tmp_path, pid)
        meta = yaml.safe_load((d / "problem.yaml").read_text())
        meta["upstream"], meta["upstream_partial"] = up, part
        (d / "problem.yaml").write_text(yaml.safe_dump(meta))
    cov = coverage(load_problems(str(tmp_path)).problems)
    assert cov.covered_by == {1: ["p_one"], 2: ["p_one", "p_two"]}
    assert cov.partial == {3: ["p_three", "p_two"]}
    assert cov.missing == list(range(3, 88))
    assert cov.per_category["collective"] == 3 and cov.short_categories["collective"] == 3
    third = rows(cov)[2]
    assert third["upstream"] == "broadcast" and third["covered by"] == "MISSING (partial: p_three, p_two)"
    assert "short: collective (3, needs 2 more)" in summary(cov)[-1]


def test_an_id_cannot_be_both_covered_and_partial(tmp_path):
    d = copy_problem(tmp_path, "both")
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    meta["upstream"], meta["upstream_partial"] = [1], [1, 2]
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(ProblemLoadError) as info:
        load_problem(str(tmp_path), "both")
    assert info.value.error.field == "upstream_partial"
