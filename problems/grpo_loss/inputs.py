import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    gr, s, t = size["groups"], size["samples_local"], size["tokens"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    logp_old = -torch.rand(gr, s, t, generator=g, device=device) * 4.0
    # the current policy moved a little: ratios around 1, some beyond the clip range
    logp_new = logp_old + 0.3 * torch.randn(gr, s, t, generator=g, device=device)
    rewards = torch.randn(gr, s, generator=g, device=device)
    lengths = torch.randint(t // 4, t + 1, (gr, s, 1), generator=g, device=device)
    mask = (torch.arange(t, device=device) < lengths).to(dt)
    return logp_new.to(dt), logp_old.to(dt), rewards.to(dt), mask


def roofline(world_size, size):
    gr, s, t = size["groups"], size["samples_local"], size["tokens"]
    n = gr * s * t
    return {
        # receive the other ranks' rewards, all-reduce two scalars
        "nvlink_bytes_per_rank": (world_size - 1) * gr * s * 4 + 2 * (world_size - 1) / world_size * 8,
        # ~10 flops per token (sub, exp, 2 mul, clamp, min, neg, mask mul, 2 sums)
        "flops_per_rank": 10.0 * n,
        # read logp_new, logp_old and mask once
        "hbm_bytes_per_rank": 3.0 * n * 4,
    }
