import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    t, h, v = size["tokens"], size["hidden"], size["vocab"]
    if v % world_size:
        raise ValueError(f"vocab {v} not divisible by world size {world_size}")
    gx = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 232_323)
    x = torch.randn(t, h, generator=gx, device=device).to(dt)  # replicated: seed only
    loc = v // world_size
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # logits ~N(0, 1); the bias is a small correction
    w = (torch.randn(loc, h, generator=g, device=device) / math.sqrt(h)).to(dt)
    b = (0.1 * torch.randn(loc, generator=g, device=device)).to(dt)
    return x, w, b


def roofline(world_size, size):
    t, h, v = size["tokens"], size["hidden"], size["vocab"]
    e = _BYTES[size["dtype"]]
    return {
        # receive the other ranks' logits
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * t * v * e,
        "flops_per_rank": 2.0 * t * h * v / world_size,
        # read the weight shard (dominant), the bias and hidden states; write all logits
        "hbm_bytes_per_rank": (v / world_size * (h + 1) + t * h + t * v) * e,
    }
