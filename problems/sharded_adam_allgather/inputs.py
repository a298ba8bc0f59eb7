import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    n = size["shard"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # gradients ~1e-2; moments of a run in progress: m at the gradient's scale, v such that
    # this step's g^2 is a visible part of v'
    grad = 1e-2 * torch.randn(n, generator=g, device=device)
    master = 0.02 * torch.randn(n, generator=g, device=device)
    m = 1e-2 * torch.randn(n, generator=g, device=device)
    v = 1e-6 * (0.5 + torch.randn(n, generator=g, device=device) ** 2)
    return (grad.to(dt), master.to(dt), m.to(dt), v.to(dt), 1e-3, 0.9, 0.999, 1e-8, 1 + seed % 7)


def roofline(world_size, size):
    n = size["shard"]
    return {
        # receive the other ranks' updated shards
        "nvlink_bytes_per_rank": (world_size - 1) * n * 4.0,
        # ~12 flops per element (two moment updates, bias corrections, sqrt, divide, update)
        "flops_per_rank": 12.0 * n,
        # read g, p, m, v; write m', v' and the gathered parameters
        "hbm_bytes_per_rank": (4 + 2 + world_size) * n * 4.0,
    }
