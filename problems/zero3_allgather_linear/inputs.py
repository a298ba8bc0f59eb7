import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    m, k, nl = size["m"], size["k"], size["n_local"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(m, k, generator=g, device=device)
    w = torch.randn(nl, k, generator=g, device=device) / k**0.5
    return x.to(dt), w.to(dt)


def roofline(world_size, size):
    m, k, nl = size["m"], size["k"], size["n_local"]
    e = _BYTES[size["dtype"]]
    n = world_size * nl
    return {
        # receive the w-1 other weight shards
        "nvlink_bytes_per_rank": (world_size - 1) * nl * k * e,
        # GEMM [m, k] x [k, n]
        "flops_per_rank": 2.0 * m * k * n,
        # read x and the gathered weight (written once), write y
        "hbm_bytes_per_rank": (m * k + 2 * n * k + m * n) * e,
    }
