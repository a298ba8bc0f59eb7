import random

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def _count(rank, seed, size):
    # every fourth seed leaves the odd ranks empty (a data-parallel shard that ran dry);
    # otherwise the shard sizes differ per rank
    if seed % 4 == 3 and rank % 2 == 1:
        return 0
    # Python's RNG, not torch's: shapes must be computable without tensor data (the memory
    # estimate builds inputs under FakeTensorMode)
    return random.Random(seed * 1_000_003 + 7919 * rank + 31).randint(size["n_min"], size["n_max"])


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n = _count(rank, seed, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # integer-valued floats on a 1/64 grid: many exact duplicates (ties across ranks), and a
    # per-rank shift so the ranks' value ranges overlap only in part (uneven buckets)
    span = size["span"]
    ints = torch.randint(-span, span, (n,), generator=g, device=device)
    shift = (rank * span) // max(1, world_size)
    values = (ints + shift).to(torch.float64) / 64.0
    return (values.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    w = world_size
    # some seeds leave half the ranks empty: the smallest possible share per rank
    out_min = ((w + 1) // 2) * size["n_min"] // w
    return {
        # the busiest rank receives at least the average number of output elements that come
        # from other ranks; with these shifted ranges that average was >= 0.71 * out_min in
        # every case measured (world 2-8, with and without empty ranks): a third is safe
        "nvlink_bytes_per_rank": out_min * e / 3.0 if w > 1 else 0.0,
        # comparisons are not flops: a sort counts as memory traffic only
        "flops_per_rank": 0.0,
        # read the shard once and write the output once
        "hbm_bytes_per_rank": float((size["n_min"] // 2 + out_min) * e),
    }
