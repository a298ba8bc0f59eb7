import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _pair_counts(world_size, seed, size):
    """counts[s][d]: rows rank s requests from rank d; uneven, drawn from the seed alone so
    every rank sees the same matrix."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + 999_983)
    m = size["rows_per_peer"]
    return torch.randint(m - m // 2, m + m // 2 + 1, (world_size, world_size), generator=g).tolist()


def make_inputs(rank, world_size, seed, size, device="cpu"):
    counts = _pair_counts(world_size, seed, size)
    sent = [counts[rank][(rank + i) % world_size] for i in range(world_size)]
    received = [counts[(rank + i) % world_size][rank] for i in range(world_size)]
    nodes_local = max(1, 3 * sum(received) // 4)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    feats = torch.randn(nodes_local, size["hidden"], generator=g, device=device).to(getattr(torch, size["dtype"]))
    ids = torch.randint(0, nodes_local, (sum(received),), generator=g, device=device)
    return feats, ids, sent, received


def roofline(world_size, size):
    m, h = size["rows_per_peer"], size["hidden"]
    row = h * _BYTES[size["dtype"]]
    least_pair = m - m // 2  # the smallest count any pair can draw
    return {
        # every rank serves at least least_pair rows to each of its world_size-1 peers
        "nvlink_bytes_per_rank": (world_size - 1) * least_pair * row,
        "flops_per_rank": 0.0,
        # read the rows it serves, write the rows it gets back
        "hbm_bytes_per_rank": 2.0 * world_size * least_pair * row,
    }
