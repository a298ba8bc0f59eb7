import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    dt = getattr(torch, size["dtype"])
    m, kl, n = size["m"], size["k_local"], size["n"]
    x = torch.randn(m, kl, generator=g, device=device)
    # scaled so y = x W has unit variance over the full K = world_size * k_local
    w = torch.randn(kl, n, generator=g, device=device) / (world_size * kl) ** 0.5
    return x.to(dt), w.to(dt)


def roofline(world_size, size):
    m, kl, n = size["m"], size["k_local"], size["n"]
    e = _BYTES[size["dtype"]]
    return {
        # all-reduce of y [m, n]: 2 (w-1)/w of it through each rank
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * m * n * e,
        # the local GEMM plus the (w-1)/w share of the reduction adds
        "flops_per_rank": 2 * m * kl * n + (world_size - 1) / world_size * m * n,
        # read x and W, write y
        "hbm_bytes_per_rank": (m * kl + kl * n + m * n) * e,
    }
