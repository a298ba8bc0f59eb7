"""`check` catches what it promises to, and one bad problem (even one that leaves the other
ranks hung in a collective) does not stop the checks of the problems after it."""

from __future__ import annotations

import yaml

from pkb_ray.selfcheck.check import check_problems
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


# A native problem with the argument and output shapes real code has: a list of tensors, a
# dict, scalars, None; a nested output; and a truth.py holding the un-sharded math.
NESTED_INPUTS = '''
import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    grads = [torch.randn(n, generator=g, device=device) for n in size["numels"]]
    opts = {"scale": 0.5, "names": ["a", "b"], "bias": torch.randn(3, generator=g, device=device)}
    return grads, opts, size["max_norm"], None, True


def roofline(world_size, size):
    n = sum(size["numels"])
    return {"nvlink_bytes_per_rank": 8.0, "flops_per_rank": 3.0 * n, "hbm_bytes_per_rank": 12.0 * n}
'''
NESTED_REFERENCE = '''
import torch
import torch.distributed as dist


def solution(grads, opts, max_norm, unused, clip):
    sq = torch.stack([g.pow(2).sum() for g in grads]).sum().reshape(1)
    dist.all_reduce(sq)
    total = sq.sqrt()[0]
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0) if clip else torch.tensor(1.0)
    return {"grads": [g * coef * opts["scale"] for g in grads], "norm": total,
            "tags": (opts["names"][0], len(grads), None), "bias": opts["bias"] + 1}
'''
NESTED_TRUTH = '''
import torch


def expected(inputs, world_size):
    total = torch.sqrt(sum((g.double() ** 2).sum() for i in inputs for g in i[0]))
    coef = min(1.0, inputs[0][2] / (float(total) + 1e-6))
    return [{"grads": [(g.double() * coef * o["scale"]).float() for g in grads], "norm": total.float(),
             "tags": (o["names"][0], len(grads), None), "bias": o["bias"] + 1}
            for grads, o, *_ in inputs]
'''


def _nested_problem(root, pid, truth=NESTED_TRUTH):
    d = copy_problem(root, pid)
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    meta["dtype"] = "float32"
    meta["sizes"] = {"small": {"numels": [5, 7], "max_norm": 1.0}, "bench": {"numels": [1 << 20, 4096], "max_norm": 1.0}}
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))
    (d / "inputs.py").write_text(NESTED_INPUTS)
    (d / "reference.py").write_text(NESTED_REFERENCE)
    (d / "truth.py").write_text(truth)
    return d


def test_nested_arguments_and_outputs_at_world_sizes_2_and_4(tmp_path):
    _nested_problem(tmp_path, "a_nested")
    # the same problem whose truth.py disagrees with the reference (the norm off by 1%)
    _nested_problem(tmp_path, "b_truth_disagrees", NESTED_TRUTH.replace('"norm": total.float()',
                                                                        '"norm": total.float() * 1.01'))
    # a set is not an argument a candidate can be described (or a GPU harness can pass)
    d = _nested_problem(tmp_path, "c_set_argument")
    (d / "inputs.py").write_text(NESTED_INPUTS.replace('"names": ["a", "b"]', '"names": {"a", "b"}'))
    results = {r.problem: r for r in check_problems(2, source=str(tmp_path), grace_s=3.0)}
    assert results["a_nested"].status == "ok" and results["a_nested"].truth == "matched", results["a_nested"]
    bad = results["b_truth_disagrees"]
    assert bad.status == "FAIL" and "truth.py" in bad.message and "['norm']" in bad.message, bad
    bad = results["c_set_argument"]
    assert bad.status == "FAIL" and "set" in bad.message and "['names']" in bad.message, bad
    [four] = check_problems(4, source=str(tmp_path), ids=["a_nested"])
    assert four.status == "ok" and four.truth == "matched", four
