"""The PKB importer against a fixture checkout in the upstream layout (written for these tests)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch

from pkb_ray.problems import ProblemLoadError, load_problem, load_problems
from pkb_ray.problems.pkb_import import infer_category

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pkb_checkout"
SRC = f"pkb:{FIXTURE}"


def test_fixture_problems_load_with_defaults():
    loaded = load_problems(SRC)
    assert loaded.errors == []
    assert list(loaded.problems) == ["pkb_1_all_reduce", "pkb_2_all_gather", "pkb_7_ring_shift_pair"]
    p = loaded.problems["pkb_1_all_reduce"]
    assert p.spec.category == "collective"
    assert p.spec.title == "All-reduce sum of one tensor (fixture)."  # module docstring
    assert p.spec.sizes["bench"] == {"base_shape": [1024, 1024], "dtype": "bfloat16"}
    assert p.spec.sizes["small"]["dtype"] == "float32"
    assert re.fullmatch(r"[0-9a-f]{16}", p.spec.version)
    assert p.spec.source == f"pkb:{FIXTURE}"
    assert "dist.all_reduce" in p.reference_source
    assert p.roofline(8, "bench") is None
    assert loaded.problems["pkb_7_ring_shift_pair"].spec.category == "other"


def test_inputs_come_from_create_input_tensor():
    p = load_problem(SRC, "pkb_1_all_reduce")
    (x,) = p.make_inputs(1, 2, 3, "bench")
    assert x.shape == (1024, 1024) and x.dtype == torch.bfloat16
    (y,) = p.make_inputs(1, 2, 3, "bench")
    (z,) = p.make_inputs(1, 2, 4, "bench")  # our seed is upstream's trial
    assert torch.equal(x, y) and not torch.equal(x, z)
    pair = load_problem(SRC, "pkb_7_ring_shift_pair").make_inputs(0, 2, 3, "small")
    assert len(pair) == 2 and pair[0].shape == (16, 32) and pair[0].dtype == torch.float32


def test_unknown_id_and_broken_checkout(tmp_path):
    with pytest.raises(ProblemLoadError) as info:
        load_problem(SRC, "pkb_1_allreduce")
    assert "pkb_1_all_reduce" in info.value.error.message

    broken = tmp_path / "checkout"
    shutil.copytree(FIXTURE, broken)
    (broken / "reference" / "3_no_solution.py").write_text("def run(x):\n    return x\n")
    (broken / "reference" / "4_raises.py").write_text("raise ImportError('needs apex')\n")
    (broken / "reference" / "notes.py").write_text("# not N_name.py: ignored\n")
    loaded = load_problems(f"pkb:{broken}")
    assert sorted(loaded.problems) == ["pkb_1_all_reduce", "pkb_2_all_gather", "pkb_7_ring_shift_pair"]
    errors = {e.problem: e for e in loaded.errors}
    assert errors["pkb_3_no_solution"].field == "solution"
    assert "needs apex" in errors["pkb_4_raises"].message

    (broken / "utils" / "input_output_tensors.py").unlink()
    loaded = load_problems(f"pkb:{broken}")
    assert not loaded.problems
    assert all("input_output_tensors" in e.path for e in loaded.errors)
    assert "not a PKB checkout" in load_problems(f"pkb:{tmp_path}").errors[0].message


@pytest.mark.parametrize("name,category", [
    ("all_reduce", "collective"), ("gemm_all_reduce", "tensor"), ("moe_all_to_all", "expert"),
    ("ring_attention", "context"), ("vocab_parallel_cross_entropy", "vocab"),
    ("fsdp_all_gather", "fsdp_zero"), ("halo_exchange", "geometric_spatial"),
    ("gnn_message_passing", "graph"), ("something_new", "other"),
])
def test_infer_category(name, category):
    assert infer_category(name) == category
