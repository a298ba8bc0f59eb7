import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["rows"], size["cols"], generator=g, device=device)
    return (x.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    n = size["rows"] * size["cols"]
    b = n * _BYTES[size["dtype"]]
    return {
        # reduce-scatter + all-gather: each rank sends (and receives) 2 (w-1)/w of the tensor
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * b,
        # each rank sums its 1/w slice over the other w-1 ranks
        "flops_per_rank": (world_size - 1) / world_size * n,
        # read x once, write the result once
        "hbm_bytes_per_rank": 2 * b,
    }
