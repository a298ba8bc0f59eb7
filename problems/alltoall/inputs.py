import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(world_size * size["rows"], size["cols"], generator=g, device=device)
    return (x.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    b = size["rows"] * size["cols"] * _BYTES[size["dtype"]]
    return {
        # each rank sends w-1 chunks and receives w-1 chunks
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the input, write the output
        "hbm_bytes_per_rank": 2 * world_size * b,
    }
