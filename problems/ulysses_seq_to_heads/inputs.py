import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    b, s, h, d = size["batch"], size["seq_local"], size["heads"], size["head_dim"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(b, s, h, d, generator=g, device=device).to(getattr(torch, size["dtype"]))
    return x, 1, 2, world_size * s - size["pad"]


def roofline(world_size, size):
    b, s, h, d = size["batch"], size["seq_local"], size["heads"], size["head_dim"]
    nbytes = b * s * h * d * _BYTES[size["dtype"]]
    return {
        # (w-1)/w of the tensor leaves the rank; slightly less arrives (the padding is dropped)
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * nbytes * (1 - size["pad"] / (world_size * s)),
        "flops_per_rank": 0.0,
        # read x, write the output (at most as large)
        "hbm_bytes_per_rank": 2.0 * nbytes * (1 - size["pad"] / (world_size * s)),
    }
