import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    sl, h = size["s_local"], size["h"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    partial = torch.randn(world_size * sl, h, generator=g, device=device) / world_size**0.5
    residual = torch.randn(sl, h, generator=g, device=device)
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    weight = 1.0 + 0.1 * torch.randn(h, generator=gw, device=device)
    bias = 0.1 * torch.randn(h, generator=gw, device=device)
    return partial.to(dt), residual.to(dt), weight.to(dt), bias.to(dt)


def roofline(world_size, size):
    n = size["s_local"] * size["h"]
    e = _BYTES[size["dtype"]]
    return {
        # send the w-1 partial chunks other ranks own
        "nvlink_bytes_per_rank": (world_size - 1) * n * e,
        # w-1 adds per owned element, the residual add, ~8 flops of LayerNorm
        "flops_per_rank": (world_size - 1 + 9.0) * n,
        # read all partials and the residual, write y and h
        "hbm_bytes_per_rank": (world_size * n + 3 * n) * e,
    }
