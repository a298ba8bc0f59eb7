import math

import torch


def _key_splits(world_size, seed):
    g = torch.Generator().manual_seed(seed * 1_000_003 + 999_983)  # replicated
    return (1 + torch.randint(0, 3, (world_size,), generator=g)).tolist()


def _batch(rank, seed, size):
    g = torch.Generator().manual_seed(seed * 1_000_003 + 7919 * (rank + 1))
    b = size["batch_size"]
    return b - int(torch.randint(0, b // 4 + 1, (1,), generator=g))


def make_inputs(rank, world_size, seed, size, device="cpu"):
    splits = _key_splits(world_size, seed)
    b = _batch(rank, seed, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    lengths = torch.randint(0, size["max_length"] + 1, (sum(splits) * b,), generator=g, device=device)
    values = torch.randint(0, size["num_ids"], (int(lengths.sum()),), generator=g, device=device)
    return lengths, values, splits, b


def roofline(world_size, size):
    b_min = size["batch_size"] - size["batch_size"] // 4
    m = size["max_length"]
    # ids per (feature, sample) are uniform on 0..m: mean m/2, variance ((m+1)^2 - 1) / 12.
    # A rank sends every other rank at least one feature for b_min samples; six standard
    # deviations under the mean bounds the id count for any seed.
    n = b_min
    ids = max(0.0, n * m / 2 - 6.0 * math.sqrt(n * ((m + 1) ** 2 - 1) / 12))
    id_bytes = math.log2(size["num_ids"]) / 8  # ids need no more than log2(range) bits
    len_bytes = math.log2(m + 1) / 8
    per_peer = ids * id_bytes + n * len_bytes
    return {
        "nvlink_bytes_per_rank": (world_size - 1) * per_peer,
        "flops_per_rank": 0.0,
        # read its own ids (at least one feature per rank, 8 bytes each) and write what it keeps
        "hbm_bytes_per_rank": world_size * ids * 8 + ids * 8,
    }
