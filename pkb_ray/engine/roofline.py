"""The least time the hardware allows for a problem, from its counts and the measured profile.

roofline_ms = max(NVLink bytes / slowest peer link, flops / matmul rate, HBM bytes / HBM
bandwidth), all per busiest rank; roofline_fraction = roofline_ms / candidate_ms (1.0 = at
the bound). None when there is no profile (cpu) or the problem gives no counts.
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
