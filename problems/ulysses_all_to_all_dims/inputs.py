import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    shape = list(size["shape"])
    if shape[size["scatter_dim"]] % world_size:
        raise ValueError(f"shape {shape} dim {size['scatter_dim']} is not divisible by world size {world_size}")
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(shape, generator=g, device=device).to(getattr(torch, size["dtype"]))
    return x, size["scatter_dim"], size["gather_dim"]


def roofline(world_size, size):
    b = math.prod(size["shape"]) * _BYTES[size["dtype"]]
    return {
        # (w-1)/w of the tensor leaves the rank and as much arrives
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * b,
        "flops_per_rank": 0.0,
        # read x, write the output
        "hbm_bytes_per_rank": 2.0 * b,
    }
