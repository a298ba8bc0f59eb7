import math

import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n = size["n"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(n // world_size, n, generator=g, device=device)
    return (x.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    n = size["n"]
    local = n * n // world_size  # complex elements per rank
    return {
        # the transpose: (w-1)/w of the complex64 slab leaves (and arrives at) each rank
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * local * 8,
        # two passes of radix-2 FFTs: 5 N log2 N flops per full 1-D transform set
        "flops_per_rank": 2 * 5.0 * local * math.log2(n),
        # read x (fp32), write/read the intermediate (complex64), write the output
        "hbm_bytes_per_rank": local * 4 + 3.0 * local * 8,
    }
