import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["s_local"], size["h"], generator=g, device=device) * 3.0
    # the norm weight is replicated: drawn from a seed-only stream
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    weight = 1.0 + 0.1 * torch.randn(size["h"], generator=gw, device=device)
    return x.to(dt), weight.to(dt)


def roofline(world_size, size):
    n = size["s_local"] * size["h"]
    e = _BYTES[size["dtype"]]
    return {
        # receive the w-1 other normalized slices
        "nvlink_bytes_per_rank": (world_size - 1) * n * e,
        # square, sum, scale, multiply by weight: ~4 flops per local element
        "flops_per_rank": 4.0 * n,
        # read x, write the gathered output
        "hbm_bytes_per_rank": (n + world_size * n) * e,
    }
