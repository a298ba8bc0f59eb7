"""The least time the hardware allows for a problem, from its counts and the measured profile.

roofline_ms = max(NVLink bytes / slowest peer link, flops / matmul rate, HBM bytes / HBM
bandwidth), all per busiest rank; roofline_fraction = roofline_ms / candidate_ms (1.0 = at
the bound). None when there is no profile or the problem gives no counts.

On CPU ranks (`host_roofline_ms`) the bound is looser but holds by construction: the bytes a
rank must move (its own memory traffic, or what it exchanges, which crosses host memory
there) at every core's copy rate at once. A correct result below it is as implausible as
one below the GPU roofline.
"""

from __future__ import annotations

from pkb_ray.engine.hardware import HardwareProfile
from pkb_ray.problems.spec import RooflineCounts

_HALF_DTYPES = {"bf16", "bfloat16", "fp16", "float16", "half", "torch.bfloat16", "torch.float16"}


def roofline_ms(counts: RooflineCounts | None, profile: HardwareProfile | None,
                world_size: int, dtype: str) -> float | None:
    if counts is None or profile is None:
        return None
    bounds_s = []
    peer = profile.min_peer_bw_gbps(world_size)
    if counts.nvlink_bytes_per_rank and peer:
        bounds_s.append(counts.nvlink_bytes_per_rank / (peer * 1e9))
    rate = profile.bf16_tflops if dtype.lower() in _HALF_DTYPES else profile.fp32_tflops
    if counts.flops_per_rank and rate:
        bounds_s.append(counts.flops_per_rank / (rate * 1e12))
    if counts.hbm_bytes_per_rank and profile.hbm_bw_gbps:
        bounds_s.append(counts.hbm_bytes_per_rank / (profile.hbm_bw_gbps * 1e9))
    return max(bounds_s) * 1e3 if bounds_s else None


def roofline_fraction(roof_ms: float | None, candidate_ms: float | None) -> float | None:
    if roof_ms is None or not candidate_ms:
        return None
    return roof_ms / candidate_ms


def host_roofline_ms(counts: RooflineCounts | None, copy_gbps: float, cores: int) -> float | None:
    """The least time for CPU ranks: the busiest rank's memory traffic (its own reads plus
    writes, or what it exchanges, the larger) at `cores` x one copy's traffic rate (a copy
    reads and writes each byte: 2 x copy_gbps), more than any rank can have; flops left out
    (no CPU rate is measured). A lower bound, so an honest result is never below it."""
    if counts is None or copy_gbps <= 0:
        return None
    traffic = max(counts.hbm_bytes_per_rank, counts.nvlink_bytes_per_rank)
    return traffic / (2 * copy_gbps * 1e9 * max(1, cores)) * 1e3 if traffic > 0 else None
