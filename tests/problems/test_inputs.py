"""Input makers and rooflines, without process groups: seeds determine inputs, ranks differ."""

from __future__ import annotations

import math

import pytest
import torch

from pkb_ray.problems import load_problems

PROBLEMS = load_problems().problems


@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_seed_determines_inputs(pid):
    p = PROBLEMS[pid]
    for rank in (0, 1):
        a = p.make_inputs(rank, 2, 11, "small")
        b = p.make_inputs(rank, 2, 11, "small")
        c = p.make_inputs(rank, 2, 12, "small")
        assert len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))
        assert not all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, c))
    r0, r1 = p.make_inputs(0, 2, 11, "small"), p.make_inputs(1, 2, 11, "small")
    # some inputs are replicated on purpose (targets, norm weights), never all of them
    assert not all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(r0, r1))


@pytest.mark.parametrize("pid", sorted(PROBLEMS))
def test_roofline_counts_are_finite_and_grow_with_bench(pid):
    p = PROBLEMS[pid]
    for ws in p.spec.world_sizes:
        small, bench = p.roofline(ws, "small"), p.roofline(ws, "bench")
        for counts in (small, bench):
            assert all(math.isfinite(v) and v >= 0 for v in vars(counts).values())
        assert bench.hbm_bytes_per_rank > small.hbm_bytes_per_rank


def test_small_dtype_is_float32_for_gloo():
    for p in PROBLEMS.values():
        assert p.spec.sizes["small"]["dtype"] == "float32", p.id
        floats = [t for t in p.make_inputs(0, 2, 1, "small") if t.is_floating_point()]
        assert floats and floats[0].dtype == torch.float32, p.id


def test_moe_routing_is_uneven_and_int64():
    p = PROBLEMS["moe_dispatch"]
    x, idx = p.make_inputs(0, 8, 3, "small")
    assert idx.dtype == torch.int64 and idx.shape == (16, 2)
    counts = torch.bincount(torch.cat([p.make_inputs(r, 8, 3, "small")[1].flatten() for r in range(8)]),
                            minlength=64)
    assert counts.max() >= 2 * max(1, counts.min())  # skewed expert popularity
    # distinct experts per token
    assert all(len(set(row.tolist())) == idx.shape[1] for row in idx)
