import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    t, h = size["tokens"], size["hidden"]
    if t % world_size:
        raise ValueError(f"tokens {t} not divisible by world size {world_size}")
    gg = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 616_161)
    gamma = (1.0 + 0.1 * torch.randn(h, generator=gg, device=device)).to(dt)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # rows with different scales, so the normalisation matters
    scale = torch.exp(0.5 * torch.randn(t, 1, generator=g, device=device))
    x = (scale * torch.randn(t, h, generator=g, device=device)).reshape(-1).to(dt)
    return x, gamma, 1e-5


def roofline(world_size, size):
    t, h = size["tokens"], size["hidden"]
    b = t * h * _BYTES[size["dtype"]]
    return {
        # reduce-scatter: the other ranks' partials of this rank's rows arrive
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * b,
        # the (w-1) additions of the rank's rows plus ~5 flops per output element
        "flops_per_rank": (world_size - 1 + 5) * t * h / world_size,
        # read this rank's whole input, write its rows
        "hbm_bytes_per_rank": b + b / world_size,
    }
