import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    dt = getattr(torch, size["dtype"])
    ml, k, nl = size["m_local"], size["k"], size["n_local"]
    x = torch.randn(ml, k, generator=g, device=device)
    w = torch.randn(k, nl, generator=g, device=device) / k**0.5  # unit-variance outputs
    return x.to(dt), w.to(dt)


def roofline(world_size, size):
    ml, k, nl = size["m_local"], size["k"], size["n_local"]
    e = _BYTES[size["dtype"]]
    m = world_size * ml
    return {
        # receive the w-1 other activation shards
        "nvlink_bytes_per_rank": (world_size - 1) * ml * k * e,
        # GEMM [m, k] x [k, n_local]
        "flops_per_rank": 2 * m * k * nl,
        # read gathered x (written once as it arrives) and W, write the output
        "hbm_bytes_per_rank": (2 * m * k + k * nl + m * nl) * e,
    }
