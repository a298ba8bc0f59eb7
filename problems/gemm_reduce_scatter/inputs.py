import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    dt = getattr(torch, size["dtype"])
    ml, kl, n = size["m_local"], size["k_local"], size["n"]
    x = torch.randn(world_size * ml, kl, generator=g, device=device)
    w = torch.randn(kl, n, generator=g, device=device) / (world_size * kl) ** 0.5
    return x.to(dt), w.to(dt)


def roofline(world_size, size):
    ml, kl, n = size["m_local"], size["k_local"], size["n"]
    e = _BYTES[size["dtype"]]
    m = world_size * ml
    return {
        # send the w-1 partial chunks that other ranks own
        "nvlink_bytes_per_rank": (world_size - 1) * ml * n * e,
        # the local GEMM plus w-1 adds per owned output element
        "flops_per_rank": 2 * m * kl * n + (world_size - 1) * ml * n,
        # read x and W, write the owned chunk (partials may stay on chip)
        "hbm_bytes_per_rank": (m * kl + kl * n + ml * n) * e,
    }
