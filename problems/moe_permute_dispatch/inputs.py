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
    e = size["experts"]
    local = e // world_size
    # every rank's per-expert pair counts: the split sizes must agree across ranks
    counts = torch.stack([torch.bincount(routing(s, world_size, seed, size, device).reshape(-1), minlength=e)
                          for s in range(world_size)])  # [src, E]
    chosen = routing(rank, world_size, seed, size, device)
    mask = torch.nn.functional.one_hot(chosen, e).permute(2, 1, 0).to(torch.float32).contiguous()
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["tokens"], size["hidden"], generator=g, device=device).to(dt)
    input_splits = counts[rank].reshape(world_size, local).sum(1).tolist()
    per_local = counts[:, rank * local:(rank + 1) * local].contiguous()
    output_splits = per_local.sum(1).tolist()
    return x, mask, e, input_splits, output_splits, per_local


def _expected_dest_ranks(world_size, size):
    # expected distinct destination ranks per token for uniform routing:
    # w * (1 - C(E - L, k) / C(E, k))
    e, k = size["experts"], size["topk"]
    loc = e // world_size
    miss = math.comb(e - loc, k) / math.comb(e, k) if e - loc >= k else 0.0
    return world_size * (1.0 - miss)


def roofline(world_size, size):
    t, h, k = size["tokens"], size["hidden"], size["topk"]
    b = _BYTES[size["dtype"]]
    remote = _expected_dest_ranks(world_size, size) * (world_size - 1) / world_size
    return {
        # each token must reach each distinct remote rank among its experts once (a receiver
        # may copy it for several local experts). Uniform-routing expectation x 0.9: skewed
        # popularity concentrates choices a little (Jensen), and the count varies by seed
        "nvlink_bytes_per_rank": 0.9 * t * remote * h * b,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the tokens once, write the t*k received rows (the busiest rank receives at
        # least the average, t*k)
        "hbm_bytes_per_rank": (t + t * k) * h * b,
    }
