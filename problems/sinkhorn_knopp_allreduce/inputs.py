import random

import torch


def _rows(rank, seed, size):
    # the number of masked patches differs per rank and per seed, as iBOT masking does
    # Python's RNG, not torch's: shapes must be computable without tensor data (the memory
    # estimate builds inputs under FakeTensorMode)
    return random.Random(seed * 1_000_003 + 7919 * rank + 17).randint(size["rows_min"], size["rows_max"])


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n = _rows(rank, seed, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # prototype-head logits are cosine-like (|x| <~ 1): 0.3 * N(0, 1) gives exp(x / 0.07)
    # a spread of several orders of magnitude without overflow
    logits = 0.3 * torch.randn(n, size["prototypes"], generator=g, device=device)
    n_masked = torch.tensor([n], dtype=torch.int64, device=device)
    return (logits.to(getattr(torch, size["dtype"])), float(size["temp"]), n_masked,
            int(size["n_iterations"]))


def roofline(world_size, size):
    n, p, it = size["rows_min"], size["prototypes"], size["n_iterations"]
    return {
        # a rank must learn the n_iterations global per-prototype sums (P floats each); at
        # least P * 4 bytes per sum arrive whatever the algorithm
        "nvlink_bytes_per_rank": it * p * 4.0,
        # exp, then per iteration a row and a column division per element (>= 2 flops each)
        "flops_per_rank": n * p * (1.0 + 4.0 * it),
        # read the logits once, write the result once (the smallest rank count is the bound)
        "hbm_bytes_per_rank": 2.0 * n * p * 4,
    }
