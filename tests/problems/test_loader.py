"""Loader validation: every malformed problem becomes a ProblemError naming file and field,
and the well-formed problems beside it still load."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pkb_ray.problems import (
    CATEGORIES,
    ProblemLoadError,
    load_problem,
    load_problems,
)
from tests.problems.helpers import copy_problem



def _edit_meta(d: Path, **changes) -> None:
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))


def test_builtin_suite_loads_without_errors():
    loaded = load_problems()
    assert loaded.errors == []
    assert len(loaded.problems) >= 32
    counts = Counter(p.spec.category for p in loaded.problems.values())
    assert {c: counts[c] for c in CATEGORIES if counts[c] < 2} == {}
    for pid in ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"):
        assert pid in loaded.problems
    assert list(loaded.problems) == sorted(loaded.problems)  # stable order


def test_versions_hash_the_problem_files(tmp_path):
    p = load_problem("builtin", "allreduce")
    assert re.fullmatch(r"[0-9a-f]{16}", p.spec.version)
    assert load_problem("builtin", "allreduce").spec.version == p.spec.version
    d = copy_problem(tmp_path, "allreduce")
    same = load_problem(str(tmp_path), "allreduce")
    assert same.spec.version == p.spec.version  # content, not location
    (d / "reference.py").write_text((d / "reference.py").read_text() + "\n# changed\n")
    assert load_problem(str(tmp_path), "allreduce").spec.version != p.spec.version


def test_size_dtype_defaults_to_problem_dtype():
    p = load_problem("builtin", "allreduce")
    assert p.spec.sizes["small"]["dtype"] == "float32"  # the size's override
    assert p.spec.sizes["bench"]["dtype"] == p.spec.dtype == "bfloat16"


def test_unknown_id_lists_close_matches():
    with pytest.raises(ProblemLoadError) as info:
        load_problem("builtin", "allredcue")
    err = info.value.error
    assert err.problem == "allredcue" and err.field == "id"
    assert "allreduce" in err.message


BROKEN = {
    # name: (how to break it, expected file, expected field, words in the message)
    "missing_field": (lambda d: _edit_meta(d, rtol=None), "problem.yaml", "rtol", "missing"),
    "bad_category": (lambda d: _edit_meta(d, category="collectives"), "problem.yaml", "category",
                     "not one of"),
    "bad_world_sizes": (lambda d: _edit_meta(d, world_sizes=[2, 0]), "problem.yaml", "world_sizes",
                        "positive"),
    "bad_test_world_sizes": (lambda d: _edit_meta(d, test_world_sizes=[0]), "problem.yaml", "test_world_sizes",
                             "positive"),
    "swept_and_test_world_size": (lambda d: _edit_meta(d, test_world_sizes=[1, 2]), "problem.yaml",
                                  "test_world_sizes", "also in `world_sizes`"),
    "bad_ranked_outputs": (lambda d: _edit_meta(d, ranked_outputs=[[0]]), "problem.yaml", "ranked_outputs",
                           "[values, ids]"),
    "ids_ranked_twice": (lambda d: _edit_meta(d, ranked_outputs=[[0, 2], [1, 2]]), "problem.yaml", "ranked_outputs",
                         "one values output only"),
    "no_bench_size": (lambda d: _edit_meta(d, sizes={"small": {"rows": 4, "cols": 4}}), "problem.yaml",
                      "sizes.bench", "missing"),
    "wrong_type": (lambda d: _edit_meta(d, atol="small"), "problem.yaml", "atol", "expected number"),
    "typo_field": (lambda d: _edit_meta(d, tolerance=1.0), "problem.yaml", "tolerance", "unknown field"),
    "reference_raises": (lambda d: (d / "reference.py").write_text("raise RuntimeError('boom at import')\n"),
                         "reference.py", None, "boom at import"),
    "no_solution": (lambda d: (d / "reference.py").write_text("def solve(x):\n    return x\n"),
                    "reference.py", "solution", "solution"),
    "no_input_maker": (lambda d: (d / "inputs.py").write_text(
        (d / "inputs.py").read_text().replace("def make_inputs", "def make_input")),
        "inputs.py", "make_inputs", "make_inputs"),
    "no_inputs_file": (lambda d: (d / "inputs.py").unlink(), "inputs.py", None, "missing"),
    "bad_roofline": (lambda d: (d / "inputs.py").write_text(
        (d / "inputs.py").read_text().replace('"flops_per_rank": (world_size', '"flops_per_rank": -(world_size')),
        "inputs.py", "roofline", "flops_per_rank"),
    "bad_yaml": (lambda d: (d / "problem.yaml").write_text("id: [unclosed\n"), "problem.yaml", None, "YAML"),
    "no_yaml": (lambda d: (d / "problem.yaml").unlink(), "problem.yaml", None, "missing problem.yaml"),
}


def test_each_broken_problem_names_file_and_field_while_the_rest_load(tmp_path):
    copy_problem(tmp_path, "good_one")
    for name, (breaker, _, _, _) in BROKEN.items():
        breaker(copy_problem(tmp_path, name))
    copy_problem(tmp_path, "good_two")
    loaded = load_problems(str(tmp_path))
    assert sorted(loaded.problems) == ["good_one", "good_two"]
    errors = {e.problem: e for e in loaded.errors}
    assert sorted(errors) == sorted(BROKEN)
    for name, (_, fname, fld, words) in BROKEN.items():
        err = errors[name]
        assert err.path.endswith(f"{name}/{fname}"), (name, err.path)
        assert err.field == fld, (name, err)
        assert words in err.message, (name, err.message)
        assert name in str(err) and fname in str(err)


def test_load_problem_raises_with_the_structured_error(tmp_path):
    _edit_meta(copy_problem(tmp_path, "bad"), category="nope")
    with pytest.raises(ProblemLoadError) as info:
        load_problem(str(tmp_path), "bad")
    assert info.value.error.field == "category"


def test_ids_filter_and_missing_source(tmp_path):
    copy_problem(tmp_path, "a_problem")
    copy_problem(tmp_path, "b_problem")
    assert list(load_problems(str(tmp_path), ["b_problem"]).problems) == ["b_problem"]
    missing = load_problems(str(tmp_path / "nowhere"))
    assert not missing.problems and "not a directory" in missing.errors[0].message
