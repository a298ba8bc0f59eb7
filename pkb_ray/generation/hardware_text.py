"""The prompt's hardware section, written from the evaluating node's measured profile.

Three cases, each labelled for what it is:
- cuda with a profile: the GPUs, memory, SM count, compute capability, measured HBM
  bandwidth and matmul rates, the link between every pair of the evaluation's GPUs
  (`nvidia-smi topo -m`) with its measured peer-copy bandwidth, min and median;
- cuda without one (none could be measured): the design target's description (2 x H200),
  said to be that and not a measurement;
- cpu: the evaluation runs on CPU processes; the GPU description is the design target.

The text is part of the prompt, so of its hash and of every kernels_cache key: a sweep on
H100s never replays answers to a prompt written for H200s. Measured figures are stated to
two significant figures (`rounded`), so a node re-measured after its cache was wiped
(peer copies vary by about 1% run to run) mostly writes the same prompt and pays no API
call twice; a figure at a rounding edge can still flip, which costs a new answer, not a
wrong one.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkb_ray.engine.hardware import HardwareProfile

MULTICAST_NOTE = ("NVLink multicast (NVLS) is disabled: `multicast_ptr`, multimem instructions "
                  "and cuMulticastCreate are NOT available.")

DESIGN_TARGET = f"""\
NVIDIA H200 GPUs (141 GB HBM3e each, about 4.8 TB/s HBM bandwidth, compute capability
9.0, 132 SMs), every pair joined by NVLink (NV18: 18 links, about 478 GB/s per direction
between two GPUs; a measured peer-read copy reaches about 365 GB/s). Peer access between
all GPUs works. {MULTICAST_NOTE}
Software: PyTorch 2.11 with CUDA 13.0."""
"""The node the harness was designed and first measured on (docs/design.md, 2 x H200)."""

NOT_MEASURED = ("No hardware profile could be measured on the evaluating node. What follows "
                "is the design target the harness was built for, not a measurement of that "
                "node:")

ON_CPU = ("This evaluation runs on CPU processes (gloo, CPU tensors): there is no GPU, "
          "NVLink or symmetric memory here and no hardware was measured; it checks "
          "correctness only. Write the module for the GPUs it is meant for, described "
          "here as the design target (not measured):")

_NVLINK_LEGEND = ("NV# = # bonded NVLinks; SYS, NODE, PHB, PXB, PIX = a PCIe path, no NVLink")


def sig2(x: float) -> float:
    """x to two significant figures (381.45 -> 380.0, 4066.5 -> 4100.0)."""
    return float(f"{x:.2g}") if x else 0.0


def rounded(profile: HardwareProfile) -> HardwareProfile:
    """The profile as the prompt states it: rates to two significant figures."""
    return dataclasses.replace(
        profile, peer_bw_gbps={k: sig2(v) for k, v in profile.peer_bw_gbps.items()},
        hbm_bw_gbps=sig2(profile.hbm_bw_gbps), bf16_tflops=sig2(profile.bf16_tflops),
        fp32_tflops=sig2(profile.fp32_tflops))


def _num(x: float) -> str:
    return f"{sig2(x):g}"


def _is_nvlink(link: str) -> bool:
    return link.upper().startswith("NV") and link[2:].isdigit()


def _gpu_line(p: HardwareProfile, gpus: list[int]) -> str:
    n = len(gpus)
    name = p.gpu_name or "GPUs (model not recorded)"
    of_node = f" of the node's {p.gpu_count}" if p.gpu_count and p.gpu_count != n else ""
    facts = []
    if p.gpu_memory_bytes:
        facts.append(f"{p.gpu_memory_bytes / 2**30:.0f} GiB of memory each")
    if p.sm_count:
        facts.append(f"{p.sm_count} SMs")
    if p.compute_capability:
        facts.append(f"compute capability {p.compute_capability}")
    return (f"- GPUs: {n} x {name} (ranks 0..{n - 1} run on GPUs 0..{n - 1}{of_node})"
            + (", " + ", ".join(facts) if facts else "") + ".")


def _rates_line(p: HardwareProfile) -> str:
    parts = []
    if p.hbm_bw_gbps:
        parts.append(f"HBM bandwidth {_num(p.hbm_bw_gbps / 1000)} TB/s (a device-to-device copy, "
                     "bytes read + written)")
    if p.bf16_tflops or p.fp32_tflops:
        parts.append(f"matmul {_num(p.bf16_tflops)} TFLOPS bf16, {_num(p.fp32_tflops)} TFLOPS fp32")
    return ("- Measured on GPU 0: " + "; ".join(parts) + ".") if parts else "- Rates not measured."


def _matrix(p: HardwareProfile, gpus: list[int]) -> list[str]:
    """Rows: from GPU; columns: to GPU; each cell the link and the peer copy in GB/s."""
    def cell(i: int, j: int) -> str:
        if i == j:
            return "X"
        link = p.links.get(f"{i}->{j}", "")
        bw = p.peer_bw_gbps.get(f"{i}->{j}")
        return " ".join(x for x in (link, _num(bw) if bw is not None else "-") if x)

    rows = [[""] + [f"GPU{j}" for j in gpus]] + [[f"GPU{i}"] + [cell(i, j) for j in gpus] for i in gpus]
    width = max(len(c) for r in rows for c in r) + 2
    return ["  " + "".join(c.ljust(width) for c in r).rstrip() for r in rows]


def _links_lines(p: HardwareProfile, gpus: list[int]) -> list[str]:
    pairs = [(i, j) for i in gpus for j in gpus if i < j]
    source = ("`nvidia-smi topo -m`: " + _NVLINK_LEGEND) if p.links else "link types not read"
    lines = [f"- Links between these GPUs ({source}) and the measured peer-copy bandwidth in "
             "GB/s (row -> column):", "", "  ```", *_matrix(p, gpus), "  ```", ""]
    if p.links:
        missing = [f"{i}-{j} ({p.links.get(f'{i}->{j}', 'not listed')})" for i, j in pairs
                   if not _is_nvlink(p.links.get(f"{i}->{j}", ""))]
        lines.append("- Every pair of these GPUs is joined by NVLink." if not missing else
                     "- NVLink joins every pair of these GPUs except " + ", ".join(missing) +
                     ": data between those goes over PCIe, far slower; route around them.")
    bws = [v for k, v in p.peer_bw_gbps.items() if all(int(x) in gpus for x in k.split("->"))]
    if bws:
        lines.append(f"- Peer copy bandwidth over these pairs: min {_num(min(bws))} GB/s, median "
                     f"{_num(statistics.median(bws))} GB/s (the roofline below uses the min).")
    if p.peer_access:
        denied = [k for k, ok in p.peer_access.items()
                  if not ok and all(int(x) in gpus for x in k.split("->"))]
        lines.append("- Peer access between all these GPUs works." if not denied else
                     "- Peer access does NOT work for " + ", ".join(denied) + ".")
    return lines


def hardware_section(profile: HardwareProfile | None, world_size: int, device: str) -> str:
    """The prompt's hardware paragraph for an evaluation at `world_size` on `device`:
    measured (a profile on cuda), the labelled design target (cuda, no profile) or the
    CPU note (cpu)."""
    if device != "cuda":
        return f"{ON_CPU}\n\n{DESIGN_TARGET}"
    if profile is None:
        return f"{NOT_MEASURED}\n\n{DESIGN_TARGET}"
    p = rounded(profile)
    gpus = list(range(min(world_size, p.gpu_count) if p.gpu_count else world_size))
    # No fingerprint in the text: it hashes the driver version too, and a driver update
    # must not make every prompt new when the hardware it describes is the same.
    lines = ["Measured on the node that evaluates this sweep:",
             "", _gpu_line(p, gpus), _rates_line(p), *_links_lines(p, gpus), "", MULTICAST_NOTE]
    if p.torch_version:
        lines.append(f"Software: PyTorch {p.torch_version}" +
                     (f" with CUDA {p.cuda_version}." if p.cuda_version else "."))
    return "\n".join(lines).replace("\n\n\n", "\n\n").strip()
