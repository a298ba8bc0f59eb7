"""GPU runs of the engine (device: nvidia-h200-x2). Skipped where fewer than 2 GPUs.

    python -m pytest tests/engine/test_gpu.py -m gpu -s -q

The test process stays CUDA-free (it plays the node actor): GPUs are counted with
nvidia-smi, and every CUDA call happens in judge and worker processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig
from pkb_ray.engine import EvalRequest, evaluate, prebuild
from pkb_ray.engine.hardware import gpu_count
from pkb_ray.problems.includes import read_candidate_file
from pkb_ray.records import FailureClass

from .conftest import ADVERSARIAL, FIXTURE_PROBLEMS as FIXTURES, LOADER

F = FailureClass
REPO = Path(__file__).resolve().parents[2]
GPU_ADV = ADVERSARIAL / "gpu"


def _gpu_count() -> int:
    return gpu_count()


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_gpu_count() < 2, reason="needs 2 CUDA GPUs (run on the device)")]

TIMING = TimingConfig()  # the instrument a sweep uses (its 2 s of timing), not a longer one
TIMEOUTS = TimeoutConfig(start_s=120.0, load_s=300.0, trial_s=30.0, timing_s=120.0)


def _req(source: str, cache_dir: str, problem: str = "allreduce", size: str = "small", **kw) -> EvalRequest:
    from .conftest import CELL_FIELDS

    cell = dict(problem_id=problem, problems_source="builtin", candidate_source=source, device="cuda", size=size)
    settings = dict(world_size=2, trials=5, timing=TIMING, timeouts=TIMEOUTS, cache_dir=cache_dir)
    for k, v in kw.items():
        (cell if k in CELL_FIELDS else settings)[k] = v
    return EvalRequest(**cell, eval=EvalConfig(**settings))


def _report(tag: str, res) -> None:
    print(f"\n[{tag}] correct={res.correct} failure={res.failure} speedup={res.speedup} "
          f"ci=[{res.speedup_ci_low}, {res.speedup_ci_high}] candidate_ms={res.candidate_ms} "
          f"reference_ms={res.reference_ms} roofline_fraction={res.roofline_fraction} "
          f"judge_clock_ratio={res.judge_clock_ratio} checked={res.checked_timed_calls} "
          f"node_s={res.node_seconds:.2f} flags={res.flags} sandbox={res.sandbox!r} msg={res.message[:240]}")


@pytest.mark.parametrize("problem", ["allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall"])
def test_expert_is_correct_with_speedup(problem, cache_dir):
    src = read_candidate_file(REPO / "problems" / problem / "expert.py")
    res = evaluate(_req(src, cache_dir, problem=problem, size="bench"))
    _report(f"expert {problem} bench", res)
    assert res.correct, (res.message, res.log[-4000:])
    assert res.speedup and res.speedup > 0 and res.speedup_ci_low <= res.speedup <= res.speedup_ci_high
    assert res.roofline_ms and 0 < res.roofline_fraction <= 1.0  # above 1.0: wrong counts, or a cheat
    assert res.sandbox.startswith("bwrap"), res.sandbox
    assert res.checked_timed_calls >= 5 and res.judge_clock_ratio is not None


def _run(name: str, cache_dir: str, **kw):
    path = GPU_ADV / f"{name}.py" if (GPU_ADV / f"{name}.py").exists() else ADVERSARIAL / f"{name}.py"
    res = evaluate(_req(path.read_text(), cache_dir, **kw))
    _report(name, res)
    return res


def test_node_survives_gpu_faults_and_classifies_them(cache_dir):
    def next_is_fine(tag, **kw):
        # correct is what shows the node survived; timing it says nothing more (bar the base)
        res = _run("honest_peer_sum", cache_dir, **({"time_candidates": False} | kw))
        assert res.correct, (tag, res.message, res.log[-3000:])
        return res

    base = next_is_fine("start", time_candidates=True)
    res = _run("illegal_address", cache_dir)
    assert res.failure == F.CUDA_FAULT, (res.message, res.log[-3000:])
    next_is_fine("illegal_address")

    # an honest trial of the small size takes milliseconds (its first call's rendezvous ~1 s)
    res = _run("symm_barrier_hang", cache_dir,
               timeouts=TimeoutConfig(start_s=120.0, load_s=300.0, trial_s=10.0, timing_s=60.0))
    assert res.failure in (F.TIMEOUT, F.CUDA_FAULT), (res.message, res.log[-3000:])
    assert res.failing_rank == 0
    next_is_fine("symm_barrier_hang")

    for name in ("nccl_all_reduce", "functional_collective", "nccl_native"):
        res = _run(name, cache_dir)
        assert res.failure == F.FORBIDDEN_API, (name, res.message, res.log[-3000:])
    next_is_fine("forbidden calls")

    res = _run("side_stream", cache_dir)
    assert res.correct and "side_stream" in res.flags, (res.message, res.log[-3000:])
    # ~3 ms of side-stream matmuls per call must show in the time (events alone would not).
    # 20 launches a call fill the launch queue behind a held gate at the problem's batch:
    # the batch halves until they fit, and the result says so.
    assert res.candidate_ms is not None, (res.message, res.flags)
    assert res.candidate_ms > 5 * base.candidate_ms and res.candidate_ms > 1.0


def test_launch_gate_holds_honest_calls_and_refuses_a_figure_to_host_waits(cache_dir):
    # The problem's reference can be held, so every candidate of it is timed held. One that
    # waits on the GPU from the host expires the gate in every sample: it is correct, says
    # so, and gets no figure, rather than one from another instrument (unheld) than its
    # problem's other candidates get.
    honest = _run("honest_peer_sum", cache_dir)
    assert honest.correct and "timed_ungated" not in honest.flags, (honest.message, honest.log[-3000:])
    assert honest.timing is not None and honest.timing.gated and honest.speedup is not None
    res = _run("host_sync_sum", cache_dir)
    assert res.correct, (res.message, res.log[-3000:])
    assert {"waits_on_host", "unmeasurable"} <= set(res.flags) and res.speedup is None, (res.message, res.flags)
    assert res.timing is not None and res.timing.gated and res.timing.unmeasurable_kind == "waits_on_host"
    assert res.timing.calls_per_sample == 1 and res.timing.candidate_expired >= 2  # down to one call, then none
    assert res.timing.problem_calls_per_sample == honest.timing.calls_per_sample  # the problem's, not the candidate's
    assert res.node_seconds < 60, res.node_seconds


@pytest.mark.parametrize("name, failures", [
    ("replays_by_pointer_symm", {F.INCORRECT}),
    ("scans_gpu_memory", {F.INCORRECT, F.CUDA_FAULT}),
    # the CPU suite's attacks, on CUDA tensors (their store exchange moves through the host)
    ("walks_frames", {F.INCORRECT}), ("scans_gc", {F.INCORRECT}), ("stale_empty", {F.INCORRECT, F.NAN}),
    ("tensor_subclass", {F.INCORRECT}), ("lazy_result", {F.INCORRECT}), ("mutates_input", {F.INCORRECT}),
    ("forges_done", {F.INCORRECT}), ("forges_verdict", {F.RUNTIME_ERROR}),
    ("borrows_harness_section", {F.FORBIDDEN_API, F.INCORRECT, F.RUNTIME_ERROR}),
    ("unwraps_guard", {F.FORBIDDEN_API}),
    ("regenerates_inputs", {F.INCORRECT}),
])
def test_gpu_attacks_get_their_class(name, failures, cache_dir):
    res = _run(name, cache_dir) if (GPU_ADV / f"{name}.py").exists() else _run_fixture(name, cache_dir)
    assert res.failure in failures, (res.failure, res.message, res.log[-3000:])
    assert not (res.correct and (res.speedup or 0) > 1)


@pytest.mark.parametrize("name", ["probes_files", "opens_socket", "reads_judge_memory", "reads_env"])
def test_gpu_probes_find_nothing(name, cache_dir):
    res = _run_fixture(name, cache_dir, time_candidates=False)  # what a probe finds shows in its trials
    assert res.correct, (res.message, res.log[-3000:])


def _run_fixture(name: str, cache_dir: str, **kw):
    res = evaluate(_req((ADVERSARIAL / f"{name}.py").read_text(), cache_dir, problem="sum_ranks",
                        problems_source=str(FIXTURES), **kw), load_problem=LOADER)
    _report(name, res)
    return res


def test_timing_attacks_cost_what_honest_work_costs(cache_dir):
    honest = _run("honest_peer_sum", cache_dir, size="bench")
    assert honest.correct, honest.message
    l2 = _run("persisting_l2", cache_dir, size="bench")
    assert l2.correct, (l2.message, l2.log[-3000:])
    assert l2.candidate_ms > 0.9 * honest.candidate_ms, (l2.candidate_ms, honest.candidate_ms)
    ev = _run("patches_cuda_event", cache_dir, size="bench")
    assert ev.correct and "worker_clock_disagrees" in ev.flags, (ev.message, ev.flags)
    assert ev.candidate_ms > 0.8 * honest.candidate_ms, (ev.candidate_ms, honest.candidate_ms)


def test_hardware_profile_cached_and_sane(cache_dir):
    from pkb_ray.engine import hardware

    res = evaluate(_req((GPU_ADV / "honest_peer_sum.py").read_text(), cache_dir, time_candidates=False))
    assert res.correct, res.message
    prof = hardware.load_profile(cache_dir, res.hardware_fingerprint)
    print(f"\n[profile] {prof}")
    assert prof is not None
    assert prof.min_peer_bw_gbps(2) > 50 and prof.hbm_bw_gbps > 500
    assert prof.bf16_tflops > 50 and prof.fp32_tflops > 5


_LOAD_INLINE = r'''
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
from torch.utils.cpp_extension import load_inline

_CUDA = """
__global__ void add_k(float* out, const float* peer, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] += peer[i];
}
void add_into(torch::Tensor out, torch::Tensor peer) {
  long n = out.numel();
  add_k<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      out.data_ptr<float>(), peer.data_ptr<float>(), n);
}
"""
_ext = load_inline(name="pkb_test_add_into", cpp_sources="void add_into(torch::Tensor out, torch::Tensor peer);",
                   cuda_sources="#include <ATen/cuda/CUDAContext.h>\n" + _CUDA, functions=["add_into"])
_STATE = {}


def solution(x):
    key = (tuple(x.shape), x.dtype)
    if key not in _STATE:
        buf = symm_mem.empty(x.shape, dtype=x.dtype, device=x.device)
        _STATE[key] = (buf, symm_mem.rendezvous(buf, dist.group.WORLD))
    buf, hdl = _STATE[key]
    buf.copy_(x)
    hdl.barrier(channel=0)
    out = x.clone()
    for r in range(hdl.world_size):
        if r != hdl.rank:
            _ext.add_into(out, hdl.get_buffer(r, tuple(x.shape), x.dtype))
    hdl.barrier(channel=0)
    return out
'''


def test_prebuild_compiles_without_gpu_and_ranks_reuse_it(cache_dir):
    """The small allreduce size is float32, which the extension handles."""
    build = prebuild(_LOAD_INLINE, "9.0", cache_dir, device="cuda")
    print(f"\n[prebuild] ok={build.ok} compile_seconds={build.compile_seconds:.1f} sandboxed in {build.extensions_dir}")
    assert build.ok, (build.message, build.log[-3000:])
    sos = {p: p.stat().st_mtime for p in Path(build.extensions_dir).rglob("*.so")}
    assert sos, "prebuild left no shared object in the extension cache"
    res = evaluate(_req(_LOAD_INLINE, cache_dir, torch_cuda_arch_list="9.0"), build=build)
    _report("load_inline after prebuild", res)
    assert res.correct, (res.message, res.log[-3000:])
    assert res.compile_seconds == build.compile_seconds
    assert {p: p.stat().st_mtime for p in sos} == sos  # the ranks did not rebuild


def test_compile_error_is_classified_before_gpu_time(cache_dir):
    bad = _LOAD_INLINE.replace("long n = out.numel();", "long n = out.numel() +;")
    build = prebuild(bad, "9.0", cache_dir, device="cuda")
    assert not build.ok and build.failure == F.COMPILE_ERROR, build.log[-2000:]
    res = evaluate(_req(bad, cache_dir), build=build)
    assert res.failure == F.COMPILE_ERROR and res.node_seconds < 5 and res.build_log


def test_gpu_node_evaluator_through_ray(cache_dir):
    ray = pytest.importorskip("ray")
    from pkb_ray.engine import gpu_nodes_in_cluster, start_node_evaluators

    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    try:
        nodes = gpu_nodes_in_cluster()
        assert nodes and nodes[0]["gpus"] >= 2
        actors = start_node_evaluators("cuda", world_size=2, placement="gpu_node")
        assert len(actors) == len([n for n in nodes if n["gpus"] >= 2])
        info = ray.get(actors[0].info.remote())
        print(f"\n[actor] {info}")
        assert len(info["cuda_visible_devices"].split(",")) == nodes[0]["gpus"]
        expert = read_candidate_file(REPO / "problems" / "allreduce" / "expert.py")
        for src, want in ((expert, None),
                          ((GPU_ADV / "illegal_address.py").read_text(), F.CUDA_FAULT),
                          (expert, None)):
            res = ray.get(actors[0].evaluate.remote(_req(src, cache_dir, size="bench")), timeout=600)
            _report("ray", res)
            assert res.failure == want and res.correct == (want is None), (res.message, res.log[-3000:])
        assert ray.get(actors[0].info.remote())["pid"] == info["pid"]
    finally:
        ray.shutdown()
