import torch


def _all_counts(world_size, seed, size, device):
    """Valid-token counts of every rank [world, slots]: drawn without the rank (all ranks agree
    on the global sums). About 1 in 8 counts is 0; every slot has at least one valid token."""
    slots, top = size["slots"], size["max_tokens"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 77_777)
    counts = torch.randint(1, top + 1, (world_size, slots), generator=g, device=device)
    empty = torch.rand(world_size, slots, generator=g, device=device) < 0.125
    counts = counts.masked_fill(empty, 0)
    dead = counts.sum(0) == 0
    # a slot nobody has tokens for would make the normalisation 0/0: give it one token on a rank
    fix_rank = torch.arange(slots, device=device) % world_size
    counts[fix_rank[dead], torch.nonzero(dead).flatten()] = 1
    return counts


def make_inputs(rank, world_size, seed, size, device="cpu"):
    counts = _all_counts(world_size, seed, size, device)
    local = counts[rank].clone()
    total = counts.sum(0)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    slots = size["slots"]
    loss = 2.0 + torch.randn(slots, generator=g, device=device)
    loss = loss.masked_fill(local == 0, float("inf"))
    grad_norm = torch.randn(slots, generator=g, device=device)
    grad_sum = torch.randn(slots, generator=g, device=device)
    return loss, local, total, grad_norm, grad_sum


def roofline(world_size, size):
    n = size["slots"]
    return {
        # one float32 all-reduce of [slots]: reduce-scatter + all-gather
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 4 * n,
        # mul, sum share, div; mul, div, mul, mul, add
        "flops_per_rank": 8.0 * n,
        # read loss, grad_normalized_loss, grad_loss_sum (4 B), both counts (8 B); write 3 outputs
        "hbm_bytes_per_rank": (3 * 4 + 2 * 8 + 3 * 4) * n,
    }
