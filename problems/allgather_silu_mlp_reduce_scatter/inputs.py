import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    m, h, f = size["m"], size["h"], size["f"]
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x_local = torch.randn(m, h // world_size, generator=g, device=device)
    # the weights are replicated: seeded without the rank
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    w1 = torch.randn(h, f, generator=gw, device=device) / h**0.5
    w2 = torch.randn(f, h, generator=gw, device=device) / f**0.5
    return x_local.to(dt), w1.to(dt), w2.to(dt)


def roofline(world_size, size):
    m, h, f = size["m"], size["h"], size["f"]
    e = _BYTES[size["dtype"]]
    m_local, h_local = m // world_size, h // world_size
    return {
        # this rank's rows of the other ranks' hidden shards: all it must receive
        "nvlink_bytes_per_rank": (world_size - 1) * m_local * h_local * e,
        # two GEMMs on this rank's rows
        "flops_per_rank": 4.0 * m_local * h * f,
        # read both weights and the gathered rows, write the output
        "hbm_bytes_per_rank": (2 * h * f + 2 * m_local * h) * e,
    }
