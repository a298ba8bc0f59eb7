import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def routing(rank, world_size, seed, size, device):
    """Rank `rank`'s expert choices [tokens, topk]: topk distinct experts per token, drawn
    without replacement from a skewed popularity (Gumbel top-k on log-popularity; the
    popularity is seed-wide, the draws per rank)."""
    e, k, t = size["experts"], size["topk"], size["tokens"]
    gp = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    log_pop = torch.log_softmax(0.7 * torch.randn(e, generator=gp, device=device), dim=0)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 7 * rank + 1)
    u = torch.rand(t, e, generator=g, device=device).clamp_(min=1e-20)
    return (log_pop - torch.log(-torch.log(u))).topk(k, dim=1).indices


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    e, t, h = size["experts"], size["tokens"], size["hidden"]
    local = e // world_size
    counts = torch.stack([torch.bincount(routing(s, world_size, seed, size, device).reshape(-1), minlength=e)
                          for s in range(world_size)])  # [src, E]
    chosen = routing(rank, world_size, seed, size, device)
    routing_map = torch.zeros(e, t, dtype=torch.bool, device=device)
    routing_map[chosen.reshape(-1), torch.arange(t, device=device).repeat_interleave(size["topk"])] = True
    mapping = torch.arange(t, device=device).expand(e, t).masked_select(routing_map)
    per_local = counts[:, rank * local:(rank + 1) * local].contiguous()
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    weights = torch.softmax(torch.randn(t, size["topk"], generator=g, device=device), dim=-1)
    n_recv = int(per_local.sum())
    expert_out = torch.randn(n_recv, h, generator=g, device=device).to(dt)
    input_splits = counts[rank].reshape(world_size, local).sum(1).tolist()
    output_splits = per_local.sum(1).tolist()
    return (expert_out, weights, chosen, e, input_splits, output_splits, per_local,
            routing_map, mapping, [t, h])


def _expected_dest_ranks(world_size, size):
    # expected distinct expert ranks per token for uniform routing: w * (1 - C(E-L, k) / C(E, k))
    e, k = size["experts"], size["topk"]
    loc = e // world_size
    miss = math.comb(e - loc, k) / math.comb(e, k) if e - loc >= k else 0.0
    return world_size * (1.0 - miss)


def roofline(world_size, size):
    t, h, k = size["tokens"], size["hidden"], size["topk"]
    b = _BYTES[size["dtype"]]
    remote = _expected_dest_ranks(world_size, size) * (world_size - 1) / world_size
    return {
        # an expert rank may pre-sum its local experts' rows of one token (given the k gate
        # weights, 4 B each), so one row per (token, distinct remote expert rank) must cross.
        # Uniform-routing expectation x 0.9 for skew and seed variation (see moe_permute_dispatch)
        "nvlink_bytes_per_rank": 0.9 * t * remote * h * b,
        # one multiply-add per routed element
        "flops_per_rank": 2.0 * t * k * h,
        # read the t*k expert rows (the busiest rank holds at least the average), write t rows
        "hbm_bytes_per_rank": (t * k + t) * h * b,
    }
