import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    e, r, h = size["experts"], size["rank"], size["hidden"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    return tuple(torch.randn(shape, generator=g, device=device).to(dt)
                 for shape in ((e, r, h), (e, r, h), (e, h, r)))


def roofline(world_size, size):
    n = 3 * size["experts"] * size["rank"] * size["hidden"]
    b = n * _BYTES[size["dtype"]]
    return {
        # all-reduce (reduce-scatter + all-gather) of all three gradients
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * b,
        # the rank's 1/w share of the (w-1) additions per element
        "flops_per_rank": (world_size - 1) / world_size * n,
        # read the gradients once, write the sums once
        "hbm_bytes_per_rank": 2.0 * b,
    }
