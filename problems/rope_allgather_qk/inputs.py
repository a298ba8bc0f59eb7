import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    b, s, h, d = size["batch"], size["seq"], size["heads"], size["head_dim"]
    s_local = s // world_size
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    q = torch.randn(b, s_local, h, d, generator=g, device=device)
    k = torch.randn(b, s_local, h, d, generator=g, device=device)
    # one random angle per (batch, position, pair), repeated over both halves as RoPE does
    theta = torch.rand(b, s_local, d // 2, generator=g, device=device) * (2 * math.pi)
    theta = torch.cat([theta, theta], dim=-1)
    return q.to(dt), k.to(dt), theta.cos().to(dt), theta.sin().to(dt)


def roofline(world_size, size):
    b, s, h, d = size["batch"], size["seq"], size["heads"], size["head_dim"]
    e = _BYTES[size["dtype"]]
    local = b * (s // world_size) * h * d
    return {
        # receive the other ranks' rotated q and k blocks
        "nvlink_bytes_per_rank": (world_size - 1) * 2 * local * e,
        # two multiplies and an add per element of the local q and k
        "flops_per_rank": 3.0 * 2 * local,
        # read local q, k, cos, sin; write the gathered q and k
        "hbm_bytes_per_rank": (2 * local + 2 * b * (s // world_size) * d + 2 * world_size * local) * e,
    }
