import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    return tuple((1e-2 * torch.randn(world_size * s[0], *s[1:], generator=g, device=device)).to(dt)
                 for s in size["shard_shapes"])


def roofline(world_size, size):
    n = sum(math.prod(s) for s in size["shard_shapes"])  # elements of one rank's output
    b = n * _BYTES[size["dtype"]]
    return {
        # send the w-1 blocks other ranks own
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        # w-1 adds and one division per owned element
        "flops_per_rank": float(world_size * n),
        # read all full gradients, write the owned shards
        "hbm_bytes_per_rank": (world_size + 1) * b,
    }
