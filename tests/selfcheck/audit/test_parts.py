"""The audit's local parts, each on its own: input digests, the error against truth.py, the
truth's time limit, and the profiler trace's summary."""

from __future__ import annotations

import time

import pytest
import torch

from pkb_ray.selfcheck.audit import digest, kernels, tolerance


def _inputs(seed: int, rank: int, constant: bool = False):
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    x = torch.full((8, 4), 3.0) if constant else torch.randn(8, 4, generator=g)
    weight = torch.ones(4, 4) * 0.5  # replicated on every rank, as TP weights are
    return (x, weight, torch.randint(0, 9, (5,), generator=g), torch.randn(3, generator=g, dtype=torch.cfloat))


def test_digests_tell_seeds_ranks_and_constants_apart():
    ranks = [(digest.digest_inputs(_inputs(1, r)), digest.digest_inputs(_inputs(2, r))) for r in range(3)]
    seen = digest.compare_digests(ranks)
    assert seen["tensors"] == 4
    assert not seen["identical_ranks"] and not seen["identical_seeds"]
    assert seen["same_across_ranks"] == ["[1]"] and seen["same_across_seeds"] == ["[1]"]
    assert seen["constant"] == {"[1]": [0, 1, 2]}

    # every rank the same (inputs that ignore the rank): identical ranks, seeds still differ
    same = [(digest.digest_inputs(_inputs(1, 0)), digest.digest_inputs(_inputs(2, 0))) for _ in range(2)]
    assert digest.compare_digests(same)["identical_ranks"]
    assert not digest.compare_digests(same)["identical_seeds"]
    # inputs that ignore the seed
    fixed = [(digest.digest_inputs(_inputs(1, r)), digest.digest_inputs(_inputs(1, r))) for r in range(2)]
    assert digest.compare_digests(fixed)["identical_seeds"]
    # a permutation keeps every sum but not the index-weighted one
    x = torch.randn(1000)
    assert digest.digest_tensor("", x).sums != digest.digest_tensor("", x.flip(0)).sums
    assert digest.digest_tensor("", x).sums == digest.digest_tensor("", x.clone()).sums
    assert digest.digest_tensor("", torch.zeros(5)).constant


def test_error_ratio_is_the_comparators_rule():
    want = torch.tensor([1.0, -2.0, 0.0], dtype=torch.float64)
    got = torch.tensor([1.01, -2.0, 0.001])
    ratio, worst, ints = tolerance.error_ratio(got, want, atol=1e-3, rtol=1e-2)
    # element 0: 0.01 / (1e-3 + 1e-2) = 0.909; element 2: 0.001 / 1e-3 = 1
    assert ratio == pytest.approx(1.0, rel=1e-3) and worst == pytest.approx(0.01, rel=1e-3) and ints == 0
    ratio, _, ints = tolerance.error_ratio((got, torch.tensor([1, 2])), (want, torch.tensor([1, 3])), 1e-3, 1e-2)
    assert ints == 1
    assert tolerance.error_ratio(torch.tensor([float("nan")]), torch.tensor([1.0]), 1, 1)[0] == float("inf")
    assert tolerance.error_ratio(torch.tensor([1e-9]), torch.tensor([0.0]), 0.0, 0.0)[0] == float("inf")
    assert tolerance.error_ratio(torch.tensor([0.0]), torch.tensor([0.0]), 0.0, 0.0)[0] == 0.0
    with pytest.raises(ValueError):
        tolerance.error_ratio(torch.zeros(2), torch.zeros(3), 1, 1)
    assert tolerance.upcast((torch.zeros(2, dtype=torch.bfloat16), 3, [torch.zeros(1, dtype=torch.int32)])) \
        [0].dtype == torch.float64


class _Problem:
    """A one-rank problem whose reference sums in bfloat16 (what the seed errors measure)."""

    class spec:
        atol, rtol = 1e-2, 1e-2

    def make_inputs(self, rank, world_size, seed, size, device="cpu"):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(256, generator=g).to(torch.bfloat16),)


class _Truth:
    def __init__(self, slow_s: float = 0.0):
        self.slow_s = slow_s

    def expected(self, inputs, world_size):
        time.sleep(self.slow_s)
        return [x.cumsum(0) for (x,) in inputs]


def test_seed_errors_against_own_precision_and_float64():
    p = _Problem()
    outs = {s: p.make_inputs(0, 1, s, None)[0].cumsum(0) for s in (1, 2)}
    errs = tolerance.seed_errors(p, _Truth(), 0, 1, "small", "cpu", outs, limit_s=30)
    assert [e.seed for e in errs] == [1, 2]
    for e in errs:
        assert e.native == 0.0 and not e.note  # the same bf16 cumsum as truth.py's own
        assert 0 < e.float64 < 5  # bf16 accumulation against the exact sum
    assert tolerance.seed_errors(p, None, 0, 1, "small", "cpu", outs, 30)[0].note == "no truth.py"


def test_a_slow_truth_is_cut_off_and_noted():
    p = _Problem()
    outs = {1: p.make_inputs(0, 1, 1, None)[0].cumsum(0)}
    t0 = time.monotonic()
    (e,) = tolerance.seed_errors(p, _Truth(slow_s=5), 0, 1, "small", "cpu", outs, limit_s=0.5)
    assert time.monotonic() - t0 < 3
    assert e.native is None and "over" in e.note


def test_trace_summary_unions_overlapping_streams():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16", "ts": 0, "dur": 100},
        {"ph": "X", "cat": "kernel", "name": "ampere_gemm", "ts": 50, "dur": 100},  # overlaps NCCL
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "ts": 300, "dur": 20},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1000},  # host: not device time
        {"ph": "X", "cat": "kernel", "name": "ampere_gemm", "ts": 1000, "dur": 100},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16", "ts": 1100, "dur": 60},
    ]}
    k = kernels.summarise_trace(trace, calls=2, profiler_flops=7.0)
    assert k.busy_ms == pytest.approx((150 + 20 + 160) / 1e3 / 2)
    assert k.kernel_ms == pytest.approx(360 / 1e3 / 2) and k.nccl_ms == pytest.approx(160 / 1e3 / 2)
    assert k.kernels == 2 and k.profiler_flops == 7.0
    assert k.top[0].startswith("ampere_gemm: 0.1000 ms")
