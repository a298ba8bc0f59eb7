"""The PKB importer against a fixture checkout in the upstream layout (written for these tests)."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
import torch

from pkb_ray.problems import ProblemLoadError, load_problem, load_problems
from pkb_ray.selfcheck.check import check_problems
from pkb_ray.problems.pkb_import import UPSTREAM_CATEGORIES, infer_category
from pkb_ray.problems.spec import CATEGORIES

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pkb_checkout"
SRC = f"pkb:{FIXTURE}"
IDS = ["pkb_1_all_reduce", "pkb_2_all_gather", "pkb_4_reduce", "pkb_7_ring_shift_pair",
       "pkb_20_needs_triton", "pkb_21_clip_grad_norm", "pkb_68_huge_table"]


def test_fixture_problems_load_with_upstream_defaults():
    loaded = load_problems(SRC)
    assert loaded.errors == []
    assert list(loaded.problems) == IDS
    p = loaded.problems["pkb_1_all_reduce"]
    assert p.spec.category == "collective"
    assert p.spec.title == "All-reduce sum of one tensor (fixture)."  # module docstring
    assert p.spec.sizes["bench"] == {"base_shape": [1024, 1024], "dtype": "bfloat16"}
    assert p.spec.sizes["small"]["dtype"] == "float32"
    assert (p.spec.atol, p.spec.rtol) == (1e-2, 1e-2)  # upstream's own default
    assert p.spec.upstream == (1,)
    assert re.fullmatch(r"[0-9a-f]{16}", p.spec.version)
    assert p.spec.source == f"pkb:{FIXTURE}"
    assert "dist.all_reduce" in p.reference_source
    assert p.roofline(8, "bench") is None
    assert p.is_upstream and not p.degenerate
    # categories come from the id table, not from the file name
    assert loaded.problems["pkb_7_ring_shift_pair"].spec.category == "collective"
    assert loaded.problems["pkb_21_clip_grad_norm"].spec.category == "fsdp_zero"
    assert loaded.problems["pkb_4_reduce"].degenerate  # constant fills, like upstream 1-8


def test_category_table_covers_every_upstream_id():
    assert sorted(UPSTREAM_CATEGORIES) == list(range(1, 88))
    assert set(UPSTREAM_CATEGORIES.values()) <= set(CATEGORIES)
    # the file-name guess got these wrong; the table files them where they belong
    assert UPSTREAM_CATEGORIES[15] == "tensor" and UPSTREAM_CATEGORIES[67] == "graph"
    assert {UPSTREAM_CATEGORIES[i] for i in (4, 5, 6)} == {"collective"}


def test_a_reference_that_needs_triton_loads_and_says_so_when_called():
    p = load_problem(SRC, "pkb_20_needs_triton")
    assert p.spec.title.startswith("A reference that imports triton")
    if importlib.util.find_spec("triton") is None:
        assert p.extra["missing_gpu_package"] == "triton"
        with pytest.raises(ModuleNotFoundError, match="triton"):
            p.solution(torch.ones(2))


def test_reference_tolerance_override(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURE, checkout)
    ref = checkout / "reference" / "1_all_reduce.py"
    ref.write_text(ref.read_text() + "\nATOL = 0.0\nRTOL = 1e-3\n")
    assert (lambda s: (s.atol, s.rtol))(load_problem(f"pkb:{checkout}", "pkb_1_all_reduce").spec) == (0.0, 1e-3)
    ref.write_text(ref.read_text() + "\nRTOL = 'loose'\n")
    with pytest.raises(ProblemLoadError) as info:
        load_problem(f"pkb:{checkout}", "pkb_1_all_reduce")
    assert info.value.error.field == "RTOL"


def test_a_size_override_replaces_the_default_size_of_one_upstream_id(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURE, checkout)
    # upstream 19 asserts its last dimension is a multiple of 128; the default small is 32 wide
    (checkout / "reference" / "19_blocked_fp8_quantize.py").write_text(
        (checkout / "reference" / "1_all_reduce.py").read_text())
    sizes = load_problem(f"pkb:{checkout}", "pkb_19_blocked_fp8_quantize").spec.sizes
    assert sizes["small"] == {"base_shape": [16, 128], "dtype": "float32"}
    assert sizes["bench"] == {"base_shape": [1024, 1024], "dtype": "bfloat16"}
    assert load_problem(f"pkb:{checkout}", "pkb_1_all_reduce").spec.sizes["small"]["base_shape"] == [16, 32]


def test_upstream_helpers_import_from_utils_and_the_path_stays(tmp_path):
    """Upstream runs from its checkout's root: its code may import `from utils.<helper>`.
    That works here with sys.path left as it was (a stray file at the root shadows nothing)."""
    import sys

    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURE, checkout)
    (checkout / "utils" / "scale_helper.py").write_text("SCALE = 3.0\n")
    ref = checkout / "reference" / "1_all_reduce.py"
    ref.write_text("from utils.scale_helper import SCALE\n" + ref.read_text())
    path = list(sys.path)
    problem = load_problem(f"pkb:{checkout}", "pkb_1_all_reduce")
    assert sys.path == path and str(checkout) not in sys.path
    assert sys.modules["utils.scale_helper"].SCALE == 3.0 and callable(problem.solution)


def test_inputs_come_from_create_input_tensor():
    p = load_problem(SRC, "pkb_1_all_reduce")
    (x,) = p.make_inputs(1, 2, 3, "bench")
    assert x.shape == (1024, 1024) and x.dtype == torch.bfloat16
    (y,) = p.make_inputs(1, 2, 3, "bench")
    (z,) = p.make_inputs(1, 2, 4, "bench")  # our seed is upstream's trial
    assert torch.equal(x, y) and not torch.equal(x, z)
    pair = load_problem(SRC, "pkb_7_ring_shift_pair").make_inputs(0, 2, 3, "small")
    assert len(pair) == 2 and pair[0].shape == (16, 32) and pair[0].dtype == torch.float32


@pytest.mark.timeout(300)
def test_a_group_made_while_inputs_are_made_is_made_once():
    # upstream 56 spent 53 s of a 100 s evaluation making timed input sets, each with new
    # NCCL groups, and 40 s in the reference's first calls on them (2 x H200, s17)
    from pkb_ray.selfcheck.launcher import run_ranks
    from tests.selfcheck.audit.rank_targets import free_port

    from . import pkb_rank_targets

    res = run_ranks(pkb_rank_targets.groups_of_two_input_sets, 2, (free_port(),), timeout_s=240)
    assert res.ok, res.why()
    assert res.returned == {0: (True, 0, True), 1: (True, 0, True)}, res.returned


def test_check_takes_upstream_arguments_as_they_are():
    """Non-tensor arguments, in-place updates and degenerate inputs are warnings for upstream
    problems; inputs too large for the machine are refused before they are allocated."""
    results = {r.problem: r for r in check_problems(2, source=SRC, grace_s=3.0)}
    for pid in ("pkb_1_all_reduce", "pkb_2_all_gather", "pkb_7_ring_shift_pair"):
        assert results[pid].status == "ok" and not results[pid].warnings, results[pid]
    reduce = results["pkb_4_reduce"]
    assert reduce.status == "ok", reduce
    assert any("constant" in w for w in reduce.warnings) and any("degenerate" in w for w in reduce.warnings)
    clip = results["pkb_21_clip_grad_norm"]
    assert clip.status == "ok", clip
    assert any("modified its inputs" in w for w in clip.warnings), clip.warnings
    huge = results["pkb_68_huge_table"]
    assert huge.status == "FAIL" and "refused" in huge.message and "GiB" in huge.message, huge
    triton = results["pkb_20_needs_triton"]
    if importlib.util.find_spec("triton") is None:
        assert triton.status == "FAIL" and "triton" in triton.message


def test_unknown_id_and_broken_checkout(tmp_path):
    with pytest.raises(ProblemLoadError) as info:
        load_problem(SRC, "pkb_1_allreduce")
    assert "pkb_1_all_reduce" in info.value.error.message

    broken = tmp_path / "checkout"
    shutil.copytree(FIXTURE, broken)
    (broken / "reference" / "3_no_solution.py").write_text("def run(x):\n    return x\n")
    (broken / "reference" / "5_raises.py").write_text("raise ImportError('needs apex')\n")
    (broken / "reference" / "notes.py").write_text("# not N_name.py: ignored\n")
    loaded = load_problems(f"pkb:{broken}")
    assert sorted(loaded.problems) == sorted(IDS)
    errors = {e.problem: e for e in loaded.errors}
    assert errors["pkb_3_no_solution"].field == "solution"
    assert "needs apex" in errors["pkb_5_raises"].message

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
def test_infer_category_for_ids_beyond_the_table(name, category):
    assert infer_category(name) == category
