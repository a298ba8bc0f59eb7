import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    shape = (size["heads"], size["s_local"], size["d"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    q, k, v = (torch.randn(shape, generator=g, device=device).to(dt) for _ in range(3))
    return q, k, v


def roofline(world_size, size):
    h, s, d = size["heads"], size["s_local"], size["d"]
    e = _BYTES[size["dtype"]]
    blk = h * s * d * e
    return {
        # receive K and V of the w-1 other ranks (the last rank needs all of them)
        "nvlink_bytes_per_rank": (world_size - 1) * 2 * blk,
        # last rank: w-1 full blocks + half the diagonal block, 4 h s s d flops per full block
        "flops_per_rank": 4.0 * h * s * s * d * (world_size - 0.5),
        # read q, the gathered K/V, write o
        "hbm_bytes_per_rank": (2 + 2 * world_size) * blk,
    }
