"""`# pkb:include` in candidate and problem files: the shared expert machinery, and the
shared implementation of problems that are variants of one another, are inlined on read."""

import shutil
import traceback

import pytest

from pkb_ray.problems import ProblemLoadError, builtin_dir, load_problem
from pkb_ray.problems.includes import INCLUDE, IncludeError, read_candidate_file, read_expanded_bytes


def test_experts_are_self_contained_modules_after_expansion():
    for pid in ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"):
        src = load_problem("builtin", pid).expert_source
        assert not INCLUDE.search(src)  # no include line left
        assert "_SRC = r" in src and "def solution(" in src  # shared kernels + its own entry
        compile(src, f"{pid}/expert.py", "exec")


def test_include_errors_name_the_file(tmp_path):
    (tmp_path / "_shared").mkdir()
    (tmp_path / "p").mkdir()
    (tmp_path / "_shared" / "lib.py").write_text("X = 1\n")
    cand = tmp_path / "p" / "expert.py"
    cand.write_text("# pkb:include ../_shared/lib.py\ndef solution(x):\n    return x * X\n")
    assert "X = 1" in read_candidate_file(cand)
    cand.write_text("# pkb:include ../_shared/missing.py\n")
    with pytest.raises(IncludeError, match="missing.py"):
        read_candidate_file(cand)
    cand.write_text("# pkb:include ../../outside.py\n")
    with pytest.raises(IncludeError, match="outside"):
        read_candidate_file(cand)
    (tmp_path / "_shared" / "lib.py").write_text("# pkb:include other.py\n")
    cand.write_text("# pkb:include ../_shared/lib.py\n")
    with pytest.raises(IncludeError, match="may not include"):
        read_candidate_file(cand)


VARIANTS = {  # problems that share one implementation in problems/_shared/<family>/
    "moe_ep_forward": ("moe_ep_forward_balanced", "moe_ep_forward_narrow", "moe_ep_forward_wide"),
    "zero_mlp_adam_step": ("zero1_mlp_adam_step", "zero2_mlp_adam_step"),
    "vocab_parallel_logprob": ("vocab_parallel_logprob_topk_topp", "vocab_parallel_logprob_topk_topp_chunked",
                               "vocab_parallel_logprob_topk_topp_backward"),
    "ring_attention": ("ring_attention_pp", "ring_attention_tp"),
}


@pytest.mark.parametrize("family", sorted(VARIANTS))
def test_variants_load_their_shared_implementation_as_one_module(family):
    """The reference a worker runs and a model reads is the expanded text: self-contained."""
    for pid in VARIANTS[family]:
        p = load_problem("builtin", pid)
        assert not INCLUDE.search(p.reference_source) and "def solution(" in p.reference_source
        assert f"_shared/{family}/reference.py" in p.reference_source
        compile(p.reference_source, f"{pid}/reference.py", "exec")
        assert INCLUDE.search((p.spec.directory / "inputs.py").read_text())


def _family_copy(tmp_path, family):
    # all of _shared: a variant may also include shared code outside its family's folder
    shutil.copytree(builtin_dir() / "_shared", tmp_path / "_shared", ignore=shutil.ignore_patterns("__pycache__"))
    for pid in VARIANTS[family]:
        shutil.copytree(builtin_dir() / pid, tmp_path / pid, ignore=shutil.ignore_patterns("__pycache__"))


def test_an_edit_of_the_shared_file_changes_every_variants_version(tmp_path):
    _family_copy(tmp_path, "zero_mlp_adam_step")
    before = {pid: load_problem(str(tmp_path), pid).spec.version for pid in VARIANTS["zero_mlp_adam_step"]}
    assert before == {pid: load_problem("builtin", pid).spec.version for pid in before}  # content, not place
    assert len(set(before.values())) == 2  # the variants differ
    shared = tmp_path / "_shared" / "zero_mlp_adam_step" / "inputs.py"
    shared.write_text(shared.read_text() + "\n# changed\n")
    after = {pid: load_problem(str(tmp_path), pid).spec.version for pid in before}
    assert all(after[pid] != before[pid] for pid in before)


def test_a_file_without_includes_is_hashed_as_its_bytes(tmp_path):
    d = tmp_path / "p"
    d.mkdir()
    (d / "reference.py").write_bytes(b"def solution(x):\r\n    return x\r\n")  # CRLF kept as is
    assert read_expanded_bytes(d / "reference.py") == (d / "reference.py").read_bytes()


def test_a_broken_include_in_a_problem_file_names_it(tmp_path):
    _family_copy(tmp_path, "moe_ep_forward")
    (tmp_path / "_shared" / "moe_ep_forward" / "inputs.py").unlink()
    with pytest.raises(ProblemLoadError, match="inputs.py.*not found"):
        load_problem(str(tmp_path), "moe_ep_forward_wide")


def test_an_error_in_shared_code_shows_the_line_that_ran(tmp_path):
    _family_copy(tmp_path, "moe_ep_forward")
    shared = tmp_path / "_shared" / "moe_ep_forward" / "inputs.py"
    shared.write_text(shared.read_text().replace('h = size["hidden"]', 'h = size["no_such_key"]'))
    p = load_problem(str(tmp_path), "moe_ep_forward_wide")
    with pytest.raises(KeyError) as info:
        p.make_inputs(0, 2, 1, "small", "cpu")
    text = "".join(traceback.format_exception(info.value))
    assert "(expanded)" in text and 'size["no_such_key"]' in text, text
