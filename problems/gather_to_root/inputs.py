import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["rows"], size["cols"], generator=g, device=device)
    return x.to(getattr(torch, size["dtype"])), seed % world_size


def roofline(world_size, size):
    b = size["rows"] * size["cols"] * _BYTES[size["dtype"]]
    return {
        # dst receives every other rank's tensor
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        "flops_per_rank": 0.0,
        # dst writes the whole result and reads its own x
        "hbm_bytes_per_rank": (world_size + 1) * b,
    }
