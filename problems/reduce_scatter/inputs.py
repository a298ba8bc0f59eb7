import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(world_size * size["rows"], size["cols"], generator=g, device=device)
    return (x.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    n = size["rows"] * size["cols"]
    b = n * _BYTES[size["dtype"]]
    return {
        # each rank sends its w-1 foreign chunks (and receives w-1 copies of its own chunk)
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        # w-1 additions per output element
        "flops_per_rank": (world_size - 1) * n,
        # read the whole input, write one chunk
        "hbm_bytes_per_rank": world_size * b + b,
    }
