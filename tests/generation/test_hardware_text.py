"""The prompt's hardware section from a measured profile: the figures and the topology a
model needs, a different prompt (so kernels_cache key) per hardware, and profiles cached
by older code still loading."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from pkb_ray.engine import hardware
from pkb_ray.engine.hardware import HardwareProfile, topology_links
from pkb_ray.generation.hardware_text import MULTICAST_NOTE, NOT_MEASURED, ON_CPU, hardware_section
from pkb_ray.generation.kernels_cache import KernelsCache
from pkb_ray.generation.prompt import EvalContext, build_prompt
from pkb_ray.generation.service import GenerationService

from .conftest import FAST_RETRY, local_cfg, toy_problem

# `nvidia-smi topo -m` as the 2 x H200 node printed it (benchmarks/results/device_2026-11-22),
# ANSI underline of the header included.
H200_TOPO = ("\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
             "GPU0\t X \tNV18\t0-31\t0\t\tN/A\nGPU1\tNV18\t X \t0-31\t0\t\tN/A\n\nLegend:\n\n"
             "  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect\n"
             "  NV#  = Connection traversing a bonded set of # NVLinks")

# The profile that node cached before the device facts were recorded (the fields it had).
OLD_H200_JSON = {"fingerprint": "NVIDIA_H200x2-c57834f99ab0",
                 "peer_bw_gbps": {"0->1": 381.4537578960989, "1->0": 383.3263304125177},
                 "hbm_bw_gbps": 4066.464365890172, "bf16_tflops": 751.5417503473612,
                 "fp32_tflops": 50.81591339280656, "topology": H200_TOPO, "measured_at": 1795323429.53}


def h200x2() -> HardwareProfile:
    return dataclasses.replace(
        hardware.profile_from_dict(OLD_H200_JSON), gpu_name="NVIDIA H200", gpu_count=2,
        gpu_memory_bytes=150_754_820_096, sm_count=132, compute_capability="9.0",
        peer_access={"0->1": True, "1->0": True}, links=topology_links(H200_TOPO, [0, 1]),
        torch_version="2.11.0+cu130", cuda_version="13.0")


def _topo(n: int, missing: tuple[int, int]) -> str:
    """An n-GPU `nvidia-smi topo -m` (with a NIC column) where one pair has no NVLink."""
    head = "\t" + "\t".join(f"GPU{j}" for j in range(n)) + "\tNIC0\tCPU Affinity\tNUMA Affinity"
    rows = []
    for i in range(n):
        cells = ["X" if i == j else "SYS" if {i, j} == set(missing) else "NV18" for j in range(n)]
        rows.append(f"GPU{i}\t" + "\t".join(f" {c} " if c == "X" else c for c in cells) + "\tPXB\t0-51\t0")
    return "\n".join([head, *rows, "", "Legend:", "  X    = Self"])


def h100x8_missing_3_5() -> HardwareProfile:
    n, topo = 8, _topo(8, (3, 5))
    peer = {f"{i}->{j}": (26.3 if {i, j} == {3, 5} else 362.0 + i) for i in range(n) for j in range(n) if i != j}
    return HardwareProfile(
        fingerprint="NVIDIA_H100_80GB_HBM3x8-0123456789ab", peer_bw_gbps=peer, hbm_bw_gbps=2950.0,
        bf16_tflops=612.0, fp32_tflops=48.7, topology=topo, gpu_name="NVIDIA H100 80GB HBM3",
        gpu_count=n, gpu_memory_bytes=85_051_572_224, sm_count=132, compute_capability="9.0",
        peer_access={k: v > 100 for k, v in peer.items()}, links=topology_links(topo, list(range(n))),
        torch_version="2.11.0+cu130", cuda_version="13.0")


def test_h200_section_states_the_measured_figures_and_links():
    text = hardware_section(h200x2(), 2, "cuda")
    for needle in ("2 x NVIDIA H200", "140 GiB", "132 SMs", "compute capability 9.0",
                   "HBM bandwidth 4.1 TB/s", "750 TFLOPS bf16", "51 TFLOPS fp32", "NV18 380",
                   "min 380 GB/s, median 380 GB/s", "Every pair of these GPUs is joined by NVLink",
                   "Peer access between all these GPUs works", MULTICAST_NOTE,
                   "PyTorch 2.11.0+cu130 with CUDA 13.0"):
        assert needle in text, (needle, text)
    assert "design target" not in text and "NVIDIA_H200x2" not in text  # measured; no fingerprint


def test_h100_section_names_the_missing_link():
    text = hardware_section(h100x8_missing_3_5(), 8, "cuda")
    for needle in ("8 x NVIDIA H100 80GB HBM3", "79 GiB", "HBM bandwidth 3 TB/s", "610 TFLOPS bf16",
                   "NVLink joins every pair of these GPUs except 3-5 (SYS)",
                   "min 26 GB/s, median 360 GB/s", "Peer access does NOT work for 3->5, 5->3",
                   MULTICAST_NOTE):
        assert needle in text, (needle, text)
    matrix = [ln.split() for ln in text.splitlines() if ln.strip().startswith("GPU3 ")]
    assert matrix and matrix[0][:4] == ["GPU3", "NV18", "360", "NV18"] and "SYS" in matrix[0]
    # At world size 4 the ranks use GPUs 0..3: the 3-5 pair is not theirs to route around.
    four = hardware_section(h100x8_missing_3_5(), 4, "cuda")
    assert "4 x NVIDIA H100 80GB HBM3 (ranks 0..3 run on GPUs 0..3 of the node's 8)" in four
    assert "Every pair of these GPUs is joined by NVLink" in four and "GPU5" not in four


def test_topology_is_read_for_the_visible_gpus():
    topo = _topo(8, (4, 6))
    # CUDA_VISIBLE_DEVICES=4,5,6: visible GPU 0 is physical 4, visible 2 physical 6.
    links = topology_links(topo, [4, 5, 6])
    assert links == {"0->1": "NV18", "1->0": "NV18", "0->2": "SYS", "2->0": "SYS",
                     "1->2": "NV18", "2->1": "NV18"}
    assert topology_links(H200_TOPO, [0, 1]) == {"0->1": "NV18", "1->0": "NV18"}
    assert topology_links("", [0, 1]) == {}


def test_without_a_profile_the_text_says_what_it_is():
    assert hardware_section(None, 2, "cuda").startswith(NOT_MEASURED)
    assert hardware_section(None, 2, "cpu").startswith(ON_CPU)
    assert hardware_section(h200x2(), 2, "cpu").startswith(ON_CPU)  # cpu evaluates on CPU
    for text in (hardware_section(None, 2, "cuda"), hardware_section(None, 2, "cpu")):
        assert "H200" in text and MULTICAST_NOTE in text


def test_prompt_follows_the_profile():
    problem = toy_problem()
    on_h200 = build_prompt(problem, None, EvalContext(world_size=2, profile=h200x2()))
    on_h100 = build_prompt(problem, None, EvalContext(world_size=2, profile=h100x8_missing_3_5()))
    fallback = build_prompt(problem, None, EvalContext(world_size=2))
    assert len({on_h200.hash, on_h100.hash, fallback.hash}) == 3
    user = on_h100.messages[-1]["content"]
    assert "## Hardware\n\nMeasured on the node that evaluates this sweep" in user
    assert "linked as listed under Hardware" in user and "NVIDIA H100 80GB HBM3" in user
    assert "NOT_MEASURED" not in user and NOT_MEASURED in fallback.messages[-1]["content"]
    # A re-measured node (peer copies ~1% off) writes the same prompt: nothing is paid twice.
    jitter = h200x2()
    jitter.peer_bw_gbps = {k: v * 0.99 for k, v in jitter.peer_bw_gbps.items()}
    assert build_prompt(problem, None, EvalContext(world_size=2, profile=jitter)).hash == on_h200.hash


def test_prompt_roofline_uses_the_measured_rates():
    from pkb_ray.problems import load_problem

    problem = load_problem("builtin", "allreduce")
    user = build_prompt(problem, None, EvalContext(world_size=2, profile=h100x8_missing_3_5())).messages[-1]["content"]
    # 2 (w-1)/w x 64 MiB = 67.1 MB over NVLink at 360 GB/s (the H100's GPU 0->1, rounded).
    assert "at 360 GB/s per peer link (the slowest)" in user and "(measured on this node)" in user
    assert "at least 186 us per call" in user


def test_an_h100_sweep_does_not_replay_answers_made_for_h200(srv, tmp_path):
    def service(profile):
        return GenerationService(local_cfg(srv, "hw"), "builtin", str(tmp_path), problems={"toy_allreduce": toy_problem()},
                                 client_options=FAST_RETRY, context=EvalContext(world_size=2, profile=profile))

    first = asyncio.run(service(h200x2()).generate("toy_allreduce", 1))
    again = asyncio.run(service(h200x2()).generate("toy_allreduce", 1))
    other = asyncio.run(service(h100x8_missing_3_5()).generate("toy_allreduce", 1))
    assert not first.cached and again.cached and not other.cached
    assert other.prompt_hash != first.prompt_hash and len(srv.requests_for("hw")) == 2
    assert len(KernelsCache(tmp_path).keys()) == 2


def test_a_profile_cached_by_older_code_loads(tmp_path):
    path = hardware.profile_path(tmp_path, OLD_H200_JSON["fingerprint"])
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**OLD_H200_JSON, "field_of_a_later_version": 1}))
    old = hardware.load_profile(tmp_path, OLD_H200_JSON["fingerprint"])
    assert old is not None and not old.complete and old.min_peer_bw_gbps(2) == OLD_H200_JSON["peer_bw_gbps"]["0->1"]
    assert old.gpu_name == "" and old.links == {}
    text = hardware_section(old, 2, "cuda")  # what it knows, nothing invented
    assert "2 x GPUs (model not recorded)" in text and "380" in text and "SMs" not in text
    hardware.save_profile(tmp_path, h200x2())
    assert hardware.load_profile(tmp_path, OLD_H200_JSON["fingerprint"]).complete


def test_an_old_profile_serves_rooflines_and_is_measured_again_for_prompts(tmp_path):
    from pkb_ray.engine.node.evaluation import node_profile

    fp = hardware.fingerprint("cuda", (0, 1))
    hardware.save_profile(tmp_path, hardware.profile_from_dict({**OLD_H200_JSON, "fingerprint": fp}))
    # An evaluation's roofline takes it as it is, measuring nothing.
    assert node_profile("cuda", str(tmp_path), (0, 1), require_facts=False).hbm_bw_gbps == OLD_H200_JSON["hbm_bw_gbps"]
    # The prompts want the device facts: a fresh process measures (no GPU here, so it
    # fails) and the old profile is kept rather than none.
    kept = node_profile("cuda", str(tmp_path), (0, 1))
    assert kept is not None and not kept.complete and kept.peer_bw_gbps == OLD_H200_JSON["peer_bw_gbps"]
    assert node_profile("cpu", str(tmp_path), None) is None
