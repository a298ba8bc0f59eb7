import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _nnz(rank, seed, size):
    g = torch.Generator().manual_seed(seed * 1_000_003 + 7919 * (rank + 1))
    n = size["nnz"]
    return n - int(torch.randint(0, n // 10 + 1, (1,), generator=g))


def make_inputs(rank, world_size, seed, size, device="cpu"):
    nnz = _nnz(rank, seed, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    idx = torch.randint(0, size["num_nodes"], (nnz,), generator=g, device=device)
    value = torch.randn(nnz, size["hidden"], generator=g, device=device).to(getattr(torch, size["dtype"]))
    return idx, value


def roofline(world_size, size):
    nnz_min = size["nnz"] - size["nnz"] // 10
    row = size["hidden"] * _BYTES[size["dtype"]] + 8
    # uniform ids: the count of pairs leaving a rank is binomial(nnz, (w-1)/w); six standard
    # deviations under its mean is a bound no seed gets below
    p = (world_size - 1) / world_size
    remote = max(0.0, nnz_min * p - 6.0 * math.sqrt(nnz_min * p * (1 - p)))
    return {
        "nvlink_bytes_per_rank": remote * row,
        "flops_per_rank": 0.0,
        # read its own pairs once, write what it receives (on average as many as it sends)
        "hbm_bytes_per_rank": (nnz_min + remote) * row,
    }
