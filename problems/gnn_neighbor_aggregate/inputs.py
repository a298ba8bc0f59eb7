import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    n, f, e = size["nodes_local"], size["features"], size["edges_local"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    feats = torch.randn(n, f, generator=g, device=device).to(dt)
    u = torch.rand(e, generator=g, device=device)
    # squared uniform: popular (low-id) sources, uneven remote traffic per rank
    edge_src = (u * u * (world_size * n)).long().clamp_(max=world_size * n - 1)
    edge_dst = torch.randint(0, n, (e,), generator=g, device=device)
    return feats, edge_src, edge_dst


def roofline(world_size, size):
    n, f, e = size["nodes_local"], size["features"], size["edges_local"]
    row = f * 4
    # distinct remote sources needed: at most all remote nodes, at most the edge count
    remote_rows = min((world_size - 1) * n, (world_size - 1) / world_size * e)
    return {
        # fetch each needed remote source row once
        "nvlink_bytes_per_rank": remote_rows * row,
        # one add per edge per feature
        "flops_per_rank": float(e * f),
        # gather one source row per edge, read-modify-write the output rows
        "hbm_bytes_per_rank": e * row + 2.0 * n * row,
    }
