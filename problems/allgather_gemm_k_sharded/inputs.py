import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    m, k, n = size["m"], size["k"], size["n"]
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    a_local = torch.randn(m, k // world_size, generator=g, device=device)
    # B is replicated: seeded without the rank so every rank holds the same weights
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    b = torch.randn(k, n, generator=gw, device=device) / k**0.5
    return a_local.to(dt), b.to(dt)


def roofline(world_size, size):
    m, k, n = size["m"], size["k"], size["n"]
    e = _BYTES[size["dtype"]]
    return {
        # receive the other ranks' column blocks of A
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * m * k * e,
        # the full GEMM on every rank
        "flops_per_rank": 2.0 * m * k * n,
        # read A (every block) and B, write C
        "hbm_bytes_per_rank": (m * k + k * n + m * n) * e,
    }
