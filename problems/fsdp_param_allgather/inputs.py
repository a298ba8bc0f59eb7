import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    return tuple((0.02 * torch.randn(s, generator=g, device=device)).to(dt) for s in size["shard_shapes"])


def roofline(world_size, size):
    b = sum(math.prod(s) for s in size["shard_shapes"]) * _BYTES[size["dtype"]]
    return {
        # receive the w-1 other ranks' shards
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the local shards, write the full parameters
        "hbm_bytes_per_rank": (1 + world_size) * b,
    }
