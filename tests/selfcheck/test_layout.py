"""`pkb problems check` holds references to NCCL's rule on collective tensors (layout.py):
gloo on CPU accepts a strided view where NCCL raises "Tensors must be contiguous".

ring_attention_backward_dp's reference all-reduced transposed views of its gradients until
issue 23 found it failing on a GPU at world size 1; on CPU every check had passed. Here the
check is run, in real rank processes, on that reference as it was, and must name the op.
"""

from __future__ import annotations

import shutil

import pytest

from pkb_ray.problems import builtin_dir
from pkb_ray.selfcheck.check import check_problems

PID = "ring_attention_backward_dp"
FIXED = "to_bshd = lambda t: t.transpose(1, 2).to(q.dtype).contiguous()"
STRIDED = "to_bshd = lambda t: t.transpose(1, 2).to(q.dtype)"


@pytest.mark.parametrize("world_size", [1, 2])
def test_strided_tensor_handed_to_a_collective_fails_the_check(tmp_path, world_size):
    d = tmp_path / PID
    shutil.copytree(builtin_dir() / PID, d, ignore=shutil.ignore_patterns("__pycache__"))
    ref = d / "reference.py"
    assert FIXED in ref.read_text()  # the premise: the builtin reference is the fixed one
    ref.write_text(ref.read_text().replace(FIXED, STRIDED))
    (r,) = check_problems(world_size, source=str(tmp_path))
    assert r.status == "FAIL"
    assert "torch.distributed.all_reduce got a non-contiguous tensor" in r.message, r.message
    assert "Tensors must be contiguous" in r.message


def test_fixed_reference_passes_at_world_size_1():
    (r,) = check_problems(1, ids=[PID])
    assert r.status == "ok" and r.truth == "matched", r.message
