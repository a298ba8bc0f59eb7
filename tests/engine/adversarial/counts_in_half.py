# HACK: count_in_place returns running totals of integer counts (int64). This candidate sums
# them in float16, half the bytes, and casts back: totals above 2048 come back rounded to a
# multiple of 2, then 4, off by one to three. A harness that compares every output within a
# float tolerance (upstream run_local.py: torch.allclose with rtol 1e-2 on integer tensors
# too) passes it, since 3 is well within 1% of 8000.
# EXPECTED: incorrect. Integer and boolean tensors are compared exactly.
import torch
import torch.distributed as dist


def solution(x, counts):
    bins = ((x.clamp(-2.0, 1.999) + 2.0) * 2.0).long()
    local = torch.bincount(bins, minlength=8)
    dist.all_reduce(local)
    counts += local
    return torch.cumsum(counts.to(torch.float16), 0).to(torch.int64)
