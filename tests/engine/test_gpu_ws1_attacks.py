"""The GPU attack files at world size 1, on one GPU (device: nvidia-h100-x1 or nvidia-h200).
Skipped where no GPU.

    python -m pytest tests/engine/test_gpu_ws1_attacks.py -m gpu -s -q

test_gpu.py runs the same files at world size 2 (two GPUs, not always lent). At world size
1 the problem's answer is the rank's own input, and every judge, worker, sandbox, gate and
clock is the real one: what an attack gains against them it gains here too. Attacks that
need a peer are left to test_gpu.py: a symmetric barrier that never completes, and two that
are honest at world size 1 (measured on an H100: both correct): mutates_input sums no peer
into its input, which stays as it was, and regenerates_inputs' guess `x * world` is the
answer when there is no peer.
"""

from __future__ import annotations

import pytest

from pkb_ray.records import FailureClass

from . import test_gpu

F = FailureClass
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(test_gpu._gpu_count() < 1, reason="needs a CUDA GPU (run on the device)")]


def _run(name: str, cache_dir: str, **kw):
    return test_gpu._run(name, cache_dir, world_size=1, **kw)


def _run_fixture(name: str, cache_dir: str):
    return test_gpu._run_fixture(name, cache_dir, world_size=1)


@pytest.mark.parametrize("name, failures", [
    ("replays_by_pointer_symm", {F.INCORRECT}),
    ("scans_gpu_memory", {F.INCORRECT, F.CUDA_FAULT}),
    ("illegal_address", {F.CUDA_FAULT}),
    ("nccl_all_reduce", {F.FORBIDDEN_API}),
    ("functional_collective", {F.FORBIDDEN_API}),
    ("nccl_native", {F.FORBIDDEN_API}),
])
def test_gpu_attacks_get_their_class_at_world_size_1(name, failures, cache_dir):
    res = _run(name, cache_dir)
    assert res.failure in failures, (res.failure, res.message, res.log[-3000:])


@pytest.mark.parametrize("name, failures", [
    # walks_frames returns the first same-shaped tensor its frames hold that is not its input
    # (an output slot: what the memory held before), else its input's clone, which at world
    # size 1 is the answer: correct (None), honestly so, in one GPU-suite run of session 16 (call 3)
    ("walks_frames", {F.INCORRECT, None}), ("scans_gc", {F.INCORRECT}), ("stale_empty", {F.INCORRECT, F.NAN}),
    ("tensor_subclass", {F.INCORRECT}), ("lazy_result", {F.INCORRECT}),
    ("forges_done", {F.INCORRECT}), ("forges_verdict", {F.RUNTIME_ERROR}),
])
def test_cpu_attacks_on_cuda_tensors_at_world_size_1(name, failures, cache_dir):
    res = _run_fixture(name, cache_dir)
    assert res.failure in failures, (res.failure, res.message, res.log[-3000:])


def test_timing_lies_gain_nothing_at_world_size_1(cache_dir):
    honest = _run("honest_peer_sum", cache_dir, size="bench")
    assert honest.correct and honest.failure is None, honest.message
    # A worker clock reporting a thousandth of the truth: the figure is the judge's window,
    # the report only evidence against the worker.
    lie = _run("patches_cuda_event", cache_dir, size="bench")
    assert lie.correct and "worker_clock_disagrees" in lie.flags, (lie.message, lie.flags)
    assert lie.candidate_ms > 0.9 * honest.candidate_ms, (lie.candidate_ms, honest.candidate_ms)
    # L2 kept warm across calls: the judge scrubs it and resets the persisting set-aside.
    l2 = _run("persisting_l2", cache_dir, size="bench")
    assert l2.correct, (l2.message, l2.log[-3000:])
    assert l2.candidate_ms > 0.9 * honest.candidate_ms, (l2.candidate_ms, honest.candidate_ms)
    # ~3 ms of matmuls per call left running on a side stream: inside the window.
    side = _run("side_stream", cache_dir)
    assert side.correct and "side_stream" in side.flags, (side.message, side.flags)
    assert side.candidate_ms is not None and side.candidate_ms > 1.0, (side.candidate_ms, side.message)


def test_a_host_wait_gets_no_figure_in_a_held_problem_at_world_size_1(cache_dir):
    res = _run("host_sync_sum", cache_dir)
    assert res.correct and {"waits_on_host", "unmeasurable"} <= set(res.flags), (res.message, res.flags)
    assert res.timing is not None and res.timing.gated and res.speedup is None
    assert res.timing.unmeasurable_kind == "waits_on_host" and res.timing.calls_per_sample == 1
    assert res.node_seconds < 60, res.node_seconds
