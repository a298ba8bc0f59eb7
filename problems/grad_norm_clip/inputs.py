import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # per-tensor scales spanning 3 orders of magnitude; the global norm is well above 1,
    # so clipping always happens
    return tuple((torch.randn(n, generator=g, device=device) * 10.0 ** (-i)).to(dt)
                 for i, n in enumerate(size["shard_numels"]))


def roofline(world_size, size):
    n = sum(size["shard_numels"])
    return {
        # one float32 scalar all-reduced
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 4,
        # square-and-add, then one multiply per element
        "flops_per_rank": 3.0 * n,
        # read the gradients twice (norm, then scale) and write them once
        "hbm_bytes_per_rank": 3.0 * n * 4,
    }
