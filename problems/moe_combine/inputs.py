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
    idx, weight = _routing(rank, world_size, seed, size)
    # rows routed to this rank's experts, from every rank's routing (deterministic per seed)
    n_recv = 0
    for src in range(world_size):
        src_idx, _ = _routing(src, world_size, seed, size)
        n_recv += int(((src_idx // LOCAL_EXPERTS) == rank).sum())
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    expert_out = torch.randn(n_recv, size["hidden"], generator=g, device=device)
    return expert_out.to(getattr(torch, size["dtype"])), idx.to(device), weight.to(device)


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
        # each token's results come back once per distinct remote rank if partially reduced
        # there (DeepEP combine reduces per rank before sending); expected, uniform routing
        "nvlink_bytes_per_rank": t * remote * h * e,
        # k multiply-adds per output element
        "flops_per_rank": 2.0 * t * k * h,
        # read the t*k expert rows (balanced routing), write the outputs
        "hbm_bytes_per_rank": (t * k + t) * h * e,
    }
