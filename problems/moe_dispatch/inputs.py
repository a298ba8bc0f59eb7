import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

LOCAL_EXPERTS = 8  # experts per rank; the reference uses the same constant


def _routing(rank, world_size, seed, size):
    """Rank `rank`s top-k expert ids [tokens, topk] and gate weights, drawn on the CPU.

    Expert popularity is skewed (a seed-wide logit bias, std 0.7) so per-expert and per-rank
    token counts are uneven, as in real MoE routing; each token picks topk distinct experts.
    """
    num_experts = world_size * LOCAL_EXPERTS
    gb = torch.Generator().manual_seed(seed * 1_000_003 + 999_983)
    popularity = torch.softmax(0.7 * torch.randn(num_experts, generator=gb), dim=0)
    g = torch.Generator().manual_seed(seed * 1_000_003 + rank * 7 + 1)
    t, k = size["tokens"], size["topk"]
    idx = torch.multinomial(popularity.expand(t, num_experts), k, replacement=False, generator=g)
    weight = torch.softmax(torch.randn(t, k, generator=g), dim=-1)
    return idx, weight


def make_inputs(rank, world_size, seed, size, device="cpu"):
    idx, _ = _routing(rank, world_size, seed, size)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["tokens"], size["hidden"], generator=g, device=device)
    return x.to(getattr(torch, size["dtype"])), idx.to(device)


def _expected_dest_ranks(world_size, size):
    # expected distinct destination ranks per token under uniform routing:
    # w * (1 - C(E - L, k) / C(E, k))
    e, k, loc = world_size * LOCAL_EXPERTS, size["topk"], LOCAL_EXPERTS
    miss = math.comb(e - loc, k) / math.comb(e, k) if e - loc >= k else 0.0
    return world_size * (1.0 - miss)


def roofline(world_size, size):
    t, h, k = size["tokens"], size["hidden"], size["topk"]
    e = _BYTES[size["dtype"]]
    remote = _expected_dest_ranks(world_size, size) * (world_size - 1) / world_size
    return {
        # each token crosses NVLink once per distinct remote destination rank (DeepEP dedups
        # per rank); expected count under uniform routing
        "nvlink_bytes_per_rank": t * remote * h * e,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the tokens, write the t*k received rows (balanced routing)
        "hbm_bytes_per_rank": (t + t * k) * h * e,
    }
