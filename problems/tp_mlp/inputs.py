import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    m, h, fl = size["m"], size["h"], size["f_local"]
    # x is replicated: every rank draws it from the same (seed-only) stream
    gx = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    x = torch.randn(m, h, generator=gx, device=device)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    w1 = torch.randn(h, fl, generator=g, device=device) / h**0.5
    w2 = torch.randn(fl, h, generator=g, device=device) / (world_size * fl) ** 0.5
    return x.to(dt), w1.to(dt), w2.to(dt)


def roofline(world_size, size):
    m, h, fl = size["m"], size["h"], size["f_local"]
    e = _BYTES[size["dtype"]]
    return {
        # all-reduce of y [m, h]
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * m * h * e,
        # two GEMMs of 2 m h f_local each (GELU and adds are negligible)
        "flops_per_rank": 4 * m * h * fl,
        # read x, W1, W2, write y (the [m, f_local] intermediate can stay on chip if fused)
        "hbm_bytes_per_rank": (2 * m * h + 2 * h * fl) * e,
    }
