import math

import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    p, k = size["num_pos"] + rank % 3, size["num_neg"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # positives score higher on average, as with a trained model: ranks spread over 1..k+1
    pos = torch.randn(p, generator=g, device=device) + 1.0
    neg = torch.randn(p, k, generator=g, device=device)
    return pos, neg


def roofline(world_size, size):
    p, k = size["num_pos"], size["num_neg"]
    rows_other = (world_size - 1) * p  # at least num_pos rows per other rank
    return {
        # the least a rank can receive: the other ranks' results, log2(k + 1) bits each
        "nvlink_bytes_per_rank": rows_other * math.log2(k + 1) / 8,
        # one comparison per own negative
        "flops_per_rank": p * k,
        # read its own scores, write the whole int64 result
        "hbm_bytes_per_rank": p * (k + 1) * 4 + world_size * p * 8,
    }
