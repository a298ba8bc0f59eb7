import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    n, f, k = size["nodes_local"], size["features"], size["requests"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    feats = torch.randn(n, f, generator=g, device=device).to(dt)
    # skewed owners (squared uniform favours low node ids): uneven counts per owner rank
    u = torch.rand(k, generator=g, device=device)
    req = (u * u * (world_size * n)).long().clamp_(max=world_size * n - 1)
    return feats, req


def roofline(world_size, size):
    f, k = size["features"], size["requests"]
    row = f * 4
    return {
        # receive the (w-1)/w of requested rows owned elsewhere (uniform approximation);
        # the 8-byte ids going out are small next to the rows
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * k * (row + 8),
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the rows served to others (~k of them), write the k fetched rows
        "hbm_bytes_per_rank": 2.0 * k * row,
    }
