import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    n, c, h, w = size["n"], size["c"], size["h"], size["w"]
    # per-channel means and scales shared by all ranks, so the global statistics matter
    gc = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    mu = torch.randn(c, generator=gc, device=device)
    sigma = 0.5 + torch.rand(c, generator=gc, device=device)
    weight = 1.0 + 0.1 * torch.randn(c, generator=gc, device=device)
    bias = 0.1 * torch.randn(c, generator=gc, device=device)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(n, c, h, w, generator=g, device=device) * sigma[None, :, None, None] + mu[None, :, None, None]
    return x.to(dt), weight.to(dt), bias.to(dt)


def roofline(world_size, size):
    n = size["n"] * size["c"] * size["h"] * size["w"]
    c = size["c"]
    return {
        # all-reduce of 2c+1 float32 statistics
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * (2 * c + 1) * 4,
        # sum and sum of squares (3 flops per element), then a fused multiply-add (2 flops)
        "flops_per_rank": 5.0 * n,
        # read x twice (statistics, then normalize) and write y
        "hbm_bytes_per_rank": 3.0 * n * _BYTES[size["dtype"]],
    }
