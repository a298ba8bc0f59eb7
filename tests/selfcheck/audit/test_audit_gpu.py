"""`pkb problems check --device cuda` on real GPUs (skipped without two): one process per GPU
with NCCL, CUDA-event timing, the queued-launch probe and the profiler.

    python -m pytest tests/selfcheck/audit/test_audit_gpu.py -m gpu -q
"""

from __future__ import annotations

import pytest

from pkb_ray.selfcheck.audit import AuditPlan, audit_problems
from pkb_ray.engine.hardware import gpu_count
from tests.problems.helpers import copy_problem

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(gpu_count() < 2, reason="needs 2 CUDA GPUs (run on the device)")]

PLAN = AuditPlan(device="cuda", size="bench")


def test_collectives_are_timed_profiled_and_counted():
    run = audit_problems(2, PLAN, "builtin", ["allreduce", "gemm_allreduce"])
    for a in run.audits:
        assert a.status != "FAIL", (a.problem, a.message)
        assert a.correct == "matched" and a.reference_ms > 0.05, a
        assert 0.05 < a.roofline_fraction <= 1.0, a
        assert a.queued_ratio is not None and not a.host_waits, a
        assert a.kernels["kernels"] >= 1 and a.busy_fraction > 0.3, a.kernels
        assert a.ratios["nvlink"] == pytest.approx(1.0), a.measured
        assert a.tolerance["err_over_tol"] < 1.0, a.tolerance
        assert 0.8 < a.self_ratio < 1.25
    assert "profile" in " ".join(run.notes)


def test_host_waits_and_launch_bound_references_are_found(tmp_path):
    # the host reads a value back from the GPU inside the call
    d = copy_problem(tmp_path, "a_host_waits")
    (d / "reference.py").write_text("import torch.distributed as dist\n"
                                    "def solution(x):\n"
                                    "    out = x.clone()\n"
                                    "    dist.all_reduce(out)\n"
                                    "    if float(out[0, 0]) != float(out[0, 0]):\n"
                                    "        raise ValueError('NaN')\n"
                                    "    return out\n")
    # 400 tiny kernels around the all-reduce: the host's launch rate sets the time
    d = copy_problem(tmp_path, "b_launch_bound")
    (d / "reference.py").write_text("import torch\nimport torch.distributed as dist\n"
                                    "def solution(x):\n"
                                    "    t = torch.zeros(8, device=x.device)\n"
                                    "    for _ in range(400):\n"
                                    "        t = t * 1.0\n"
                                    "    out = x[:64].clone() + t.sum()\n"
                                    "    dist.all_reduce(out)\n"
                                    "    return torch.cat([out, x[64:] * 2])\n")
    (d / "truth.py").write_text("def expected(inputs, world_size):\n"
                                "    total = sum(x[:64] for (x,) in inputs)\n"
                                "    import torch\n"
                                "    return [torch.cat([total, x[64:] * 2]) for (x,) in inputs]\n")
    audits = {a.problem: a for a in audit_problems(2, PLAN, str(tmp_path)).audits}
    waits = audits["a_host_waits"]
    assert waits.host_waits and "host_waits" in {f.kind for f in waits.findings}, waits
    bound = audits["b_launch_bound"]
    assert bound.queued_ratio > 1.25 and "launch_bound" in {f.kind for f in bound.findings}, bound
