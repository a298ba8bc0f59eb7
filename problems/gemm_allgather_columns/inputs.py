import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    m, k, n = size["m"], size["k"], size["n"]
    dt = getattr(torch, size["dtype"])
    # A is replicated: seeded without the rank so every rank holds the same activation
    ga = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    a = torch.randn(m, k, generator=ga, device=device)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    b_local = torch.randn(k, n // world_size, generator=g, device=device) / k**0.5
    return a.to(dt), b_local.to(dt)


def roofline(world_size, size):
    m, k, n = size["m"], size["k"], size["n"]
    e = _BYTES[size["dtype"]]
    n_local = n // world_size
    return {
        # receive the other ranks' output blocks
        "nvlink_bytes_per_rank": (world_size - 1) * m * n_local * e,
        # this rank's block of the GEMM
        "flops_per_rank": 2.0 * m * k * n_local,
        # read A and b_local, write all of C
        "hbm_bytes_per_rank": (m * k + k * n_local + m * n) * e,
    }
