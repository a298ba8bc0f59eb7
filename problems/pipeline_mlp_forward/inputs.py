import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    m, t, h, f = size["num_microbatches"], size["micro_tokens"], size["hidden"], size["ffn"]
    # rank r is stage r and holds only its own weights: seeded by the rank
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(m, t, h, generator=g, device=device).to(dt) if rank == 0 else None
    w1 = (torch.randn(f, h, generator=g, device=device) / math.sqrt(h)).to(dt)
    # output projection scaled down (as deep-model inits do) so the residual stream grows
    # only ~10% per stage and stays O(1) across 8 stages
    w2 = (0.5 * torch.randn(h, f, generator=g, device=device) / math.sqrt(f)).to(dt)
    return x, w1, w2, m, t


def roofline(world_size, size):
    m, t, h, f = size["num_microbatches"], size["micro_tokens"], size["hidden"], size["ffn"]
    e = _BYTES[size["dtype"]]
    act = m * t * h * e  # all micro-batches' activations at one stage boundary
    weights = 2 * h * f * e  # one stage's w1 + w2
    return {
        # the last stage's output depends on rank 0's input x, so the last rank must receive
        # at least as many bytes as its output holds (one activation per micro-batch); the
        # reference's middle ranks also receive that much (and send as much on)
        "nvlink_bytes_per_rank": float(act),
        # two GEMMs per stage per micro-batch: world_size stages' work over world_size ranks
        # (the busiest rank does at least the average; gelu and the sum are not counted)
        "flops_per_rank": 4.0 * m * t * h * f,
        # rank 0's HBM must serve its own weights and the input once each (no other copy
        # exists), and the last rank's its weights and the output it writes
        "hbm_bytes_per_rank": float(weights + act),
    }
