import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["rows"], size["cols"], generator=g, device=device)
    return (x.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    b = size["rows"] * size["cols"] * _BYTES[size["dtype"]]
    return {
        # each rank receives the w-1 other shards
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read x, write the w-shard output
        "hbm_bytes_per_rank": b + world_size * b,
    }
