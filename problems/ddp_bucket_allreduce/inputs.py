import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    return tuple((torch.randn(s, generator=g, device=device) * 1e-2).to(dt) for s in size["shapes"])


def roofline(world_size, size):
    n = sum(math.prod(s) for s in size["shapes"])
    b = n * _BYTES[size["dtype"]]
    return {
        # all-reduce of all gradients: 2 (w-1)/w of them through each rank
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * b,
        # (w-1)/w share of the reduction adds plus one division per element
        "flops_per_rank": ((world_size - 1) / world_size + 1) * n,
        # read the gradients, write the averages
        "hbm_bytes_per_rank": 2.0 * b,
    }
