import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
NORM_TYPE = 2.0


def _typical_norm(world_size, numels):
    # the 2-norm of unit normals scaled by 10^-i (tensor i) over all ranks
    return math.sqrt(world_size * sum(n * 10.0 ** (-2 * i) for i, n in enumerate(numels)))


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # per-tensor scales spanning orders of magnitude, as real gradients do
    grads = [(torch.randn(n, generator=g, device=device) * 10.0 ** (-i)).to(dt)
             for i, n in enumerate(size["numels"])]
    # max_norm at half or 1.5x the typical norm: even seeds clip, odd seeds do not
    max_norm = _typical_norm(world_size, size["numels"]) * (0.5 if seed % 2 == 0 else 1.5)
    return grads, max_norm, NORM_TYPE


def roofline(world_size, size):
    n = sum(size["numels"])
    e = _BYTES[size["dtype"]]
    return {
        # one fp32 scalar all-reduced
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 4,
        # |g|^p and a sum, then one multiply per element
        "flops_per_rank": 3.0 * n,
        # read the gradients for the norm, again to scale them, and write them once
        "hbm_bytes_per_rank": 3.0 * n * e,
    }
