import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    b, s, h, d = size["batch"], size["seq_local"], size["heads"], size["head_dim"]
    if h % world_size:
        raise ValueError(f"heads {h} not divisible by world size {world_size}")
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    n = world_size * s - size["pad"]
    x = torch.randn(b, n, h // world_size, d, generator=g, device=device).to(getattr(torch, size["dtype"]))
    return x, 1, 2


def roofline(world_size, size):
    b, s, h, d = size["batch"], size["seq_local"], size["heads"], size["head_dim"]
    nbytes = b * s * h * d * _BYTES[size["dtype"]]  # the output; the input is pad rows smaller
    return {
        # (w-1)/w of the output's head groups arrive from peers
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * nbytes * (1 - size["pad"] / (world_size * s)),
        "flops_per_rank": 0.0,
        # read x, write the output
        "hbm_bytes_per_rank": 2.0 * nbytes * (1 - size["pad"] / (world_size * s)),
    }
