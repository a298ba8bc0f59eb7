"""Input makers and rooflines, without process groups: seeds determine inputs, ranks differ."""

from __future__ import annotations

import math

import pytest
import torch

from pkb_ray.problems import load_problems
from pkb_ray.problems.args import first_difference, native_type_errors, tensors

PROBLEMS = load_problems().problems


@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_seed_determines_inputs(pid):
    p = PROBLEMS[pid]
    ws = min(p.spec.world_sizes)
    for rank in (0, 1):
        a = p.make_inputs(rank, ws, 11, "small")
        b = p.make_inputs(rank, ws, 11, "small")
        c = p.make_inputs(rank, ws, 12, "small")
        assert native_type_errors(a) == []
        assert first_difference(a, b) is None
        assert first_difference(a, c) is not None
    r0, r1 = p.make_inputs(0, ws, 11, "small"), p.make_inputs(1, ws, 11, "small")
    # some inputs are replicated on purpose (targets, norm weights), never all of them
    assert first_difference(r0, r1) is not None


@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_roofline_counts_are_finite_and_grow_with_bench(pid):
    p = PROBLEMS[pid]
    for ws in p.spec.world_sizes:
        small, bench = p.roofline(ws, "small"), p.roofline(ws, "bench")
        for counts in (small, bench):
            assert all(math.isfinite(v) and v >= 0 for v in vars(counts).values())
        assert bench.hbm_bytes_per_rank > small.hbm_bytes_per_rank


def test_small_dtype_is_one_gloo_reduces():
    # gloo on CPU lacks bf16/fp16 reductions: small sizes run in float32 (or the problem's own
    # float64 / integer dtype); the first floating input carries that dtype
    for p in PROBLEMS.values():
        small = p.spec.sizes["small"]["dtype"]
        assert small in ("float32", "float64", "int32", "int64"), p.id
        if small.startswith("int"):
            continue
        ws = min(p.spec.world_sizes)  # any rank's: a scatter's receivers hold no tensor
        floats = [t for r in range(ws) for _, t in tensors(p.make_inputs(r, ws, 1, "small"))
                  if (t.is_floating_point() and t.element_size() > 1) or t.is_complex()]  # not fp8 payloads
        # complex inputs (FFT problems) are complex64 at the small size: float32 parts
        want = {"float32": (torch.float32, torch.complex64), "float64": (torch.float64, torch.complex128)}[small]
        assert floats and floats[0].dtype in want, p.id


def test_moe_routing_is_uneven_and_int64():
    p = PROBLEMS["moe_dispatch"]
    x, idx = p.make_inputs(0, 8, 3, "small")
    assert idx.dtype == torch.int64 and idx.shape == (16, 2)
    counts = torch.bincount(torch.cat([p.make_inputs(r, 8, 3, "small")[1].flatten() for r in range(8)]),
                            minlength=64)
    assert counts.max() >= 2 * max(1, counts.min())  # skewed expert popularity
    # distinct experts per token
    assert all(len(set(row.tolist())) == idx.shape[1] for row in idx)
