import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
NORM_TYPE = 2.0


def _scaled(numels, first_scale, g, device, dt):
    return [(torch.randn(n, generator=g, device=device) * first_scale * 10.0 ** (-i)).to(dt)
            for i, n in enumerate(numels)]


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    ep_size = max(1, world_size // 2)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    non_ep = _scaled(size["non_ep_numels"], 1.0, g, device, dt)
    ep = _scaled(size["ep_numels"], 3.0, g, device, dt)
    typical = math.sqrt(world_size * (
        sum(n * 10.0 ** (-2 * i) for i, n in enumerate(size["non_ep_numels"]))
        + sum(n * 9.0 * 10.0 ** (-2 * i) / ep_size**2 for i, n in enumerate(size["ep_numels"]))))
    # even seeds clip, odd seeds do not
    max_norm = typical * (0.5 if seed % 2 == 0 else 1.5)
    return non_ep, ep, max_norm, NORM_TYPE, ep_size


def roofline(world_size, size):
    n = sum(size["non_ep_numels"]) + sum(size["ep_numels"])
    e = _BYTES[size["dtype"]]
    return {
        # the two fp32 partial sums, all-reduced (the grid reduces ep over every rank too)
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 8,
        # |g|^p and a sum, then one multiply per element (the 1/ep_size folds into coef)
        "flops_per_rank": 3.0 * n,
        # read the gradients for the norm, again to scale them, and write them once
        "hbm_bytes_per_rank": 3.0 * n * e,
    }
