"""`# pkb:include` in candidate files: the shared expert machinery is inlined on read."""

import pytest

from pkb_ray.problems import load_problem
from pkb_ray.problems.includes import INCLUDE, IncludeError, read_candidate_file


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
