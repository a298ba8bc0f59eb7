"""`check` catches what it promises to, and one bad problem (even one that leaves the other
ranks hung in a collective) does not stop the checks of the problems after it."""

from __future__ import annotations

import yaml

from pkb_ray.problems.check import check_problems
from tests.problems.helpers import copy_problem


# allreduce's reference, broken in ways the loader cannot see (they show only when run)
REFERENCES = {
    # rank 1 raises before the all-reduce, so rank 0 hangs in it: must be killed, not waited on
    "c_raises_on_rank1": '''
import torch.distributed as dist
def solution(x):
    if dist.get_rank() == 1:
        raise ValueError("rank one broke")
    out = x.clone()
    dist.all_reduce(out)
    return out
''',
    "d_raises_everywhere": "def solution(x):\n    raise RuntimeError('always broken')\n",
    "e_nan_output": "def solution(x):\n    return x * float('nan')\n",
    "f_modifies_input": "def solution(x):\n    x.mul_(2)\n    return x\n",
    "g_nondeterministic": "import torch\ndef solution(x):\n    return x + torch.rand(())\n",
    "h_wrong_dtype": "import torch\ndef solution(x):\n    return x.to(torch.float16)\n",
    # the process vanishes without a Python exception: caught by its exit, not by a timeout
    "h2_exits": "import os\ndef solution(x):\n    os._exit(3)\n",
}
INPUTS = {
    "i_constant_inputs": ('torch.randn(size["rows"], size["cols"], generator=g, device=device)',
                          'torch.full((size["rows"], size["cols"]), float(seed), device=device)'),
    "j_ignores_seed": ("manual_seed(seed * 1_000_003 + rank)", "manual_seed(rank)"),
}


def test_check_reports_each_failure_and_recovers(tmp_path):
    copy_problem(tmp_path, "a_good")
    copy_problem(tmp_path, "b_good")
    for pid, src in REFERENCES.items():
        (copy_problem(tmp_path, pid) / "reference.py").write_text(src)
    for pid, (old, new) in INPUTS.items():
        d = copy_problem(tmp_path, pid)
        text = (d / "inputs.py").read_text()
        assert old in text
        (d / "inputs.py").write_text(text.replace(old, new))
    copy_problem(tmp_path, "z_good_after_the_failures")
    (tmp_path / "y_bad_meta").mkdir()
    (tmp_path / "y_bad_meta" / "problem.yaml").write_text("id: y_bad_meta\n")

    results = {r.problem: r for r in check_problems(2, source=str(tmp_path), grace_s=3.0)}
    assert {p for p, r in results.items() if r.ok} == {"a_good", "b_good", "z_good_after_the_failures"}
    expect = {
        "c_raises_on_rank1": "rank one broke",
        "d_raises_everywhere": "always broken",
        "e_nan_output": "non-finite",
        "f_modifies_input": "modified its inputs",
        "g_nondeterministic": "not deterministic",
        "h_wrong_dtype": "torch.float16",
        "h2_exits": "exited with code 3",
        "i_constant_inputs": "constant",
        "j_ignores_seed": "identical inputs",
        "y_bad_meta": "load error",
    }
    for pid, words in expect.items():
        assert results[pid].status == "FAIL", (pid, results[pid])
        assert words in results[pid].message, (pid, results[pid].message)


def test_problem_without_the_world_size_is_skipped(tmp_path):
    d = copy_problem(tmp_path, "only_two")
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    meta["world_sizes"] = [2]
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))
    [r] = check_problems(4, source=str(tmp_path))
    assert r.status == "skip" and r.ok
