import torch


def _block_size(rank, i, size):
    b = size["block"]
    return b - ((rank + i) % 3) * (b // 4)


def make_inputs(rank, world_size, seed, size, device="cpu"):
    f64 = torch.float64
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    hs, ws, ps = [], [], []
    for i in range(size["num_blocks"]):
        n = _block_size(rank, i, size)
        hs.append(0.01 * torch.randn(n, 1, generator=g, device=device, dtype=f64))
        ws.append(torch.randn(n, 1, generator=g, device=device, dtype=f64))
        # a covariance that has learned something: identity plus a random low-rank part
        m = max(1, n // 8)
        f = torch.randn(n, m, generator=g, device=device, dtype=f64) / m ** 0.5
        ps.append(0.5 * torch.eye(n, device=device, dtype=f64) + f @ f.T)
    gs = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)  # replicated
    error = torch.randn((), generator=gs, device=device, dtype=f64)
    lam = float(0.97 + 0.02 * torch.rand((), generator=gs, device=device))
    return hs, error, ws, ps, lam, 0.9987


def roofline(world_size, size):
    nb = size["num_blocks"]
    most = max(sum(_block_size(r, i, size) ** 2 for i in range(nb)) for r in range(world_size))
    least_w = min(sum(_block_size(r, i, size) for i in range(nb)) for r in range(world_size))
    return {
        # receive every other rank's updated weights (fp64); the scalar all-reduce is negligible
        "nvlink_bytes_per_rank": (world_size - 1) * least_w * 8,
        # P h (2 n^2) and the rank-1 update P - A K K^T (2 n^2) per block
        "flops_per_rank": 4.0 * most,
        # read each P once, write each P' once
        "hbm_bytes_per_rank": 16.0 * most,
    }
