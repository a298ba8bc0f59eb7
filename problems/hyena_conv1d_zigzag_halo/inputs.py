import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    b, c, half, k = size["batch"], size["channels"], size["chunk"], size["kernel"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(b, c, 2 * half, generator=g, device=device)
    # the short depthwise filter is a replicated weight: seed-only stream
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    weight = torch.randn(c, 1, k, generator=gw, device=device) / k ** 0.5
    return x.to(dt), weight.to(dt)


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    b, c, half, k = size["batch"], size["channels"], size["chunk"], size["kernel"]
    n = b * c * 2 * half
    return {
        # a middle rank receives k-1 samples per channel for each of its two chunks; at world 2
        # each rank gets one halo (the other comes from its own front chunk)
        "nvlink_bytes_per_rank": (2.0 if world_size > 2 else 1.0) * b * c * (k - 1) * e,
        "flops_per_rank": 2.0 * n * k,
        # read x and write y once
        "hbm_bytes_per_rank": 2.0 * n * e + c * k * e,
    }
