import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _pair_counts(world_size, seed, size):
    """counts[s][d]: rows rank s fetched from rank d; uneven, drawn from the seed alone so
    every rank sees the same matrix."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + 999_983)
    m = size["rows_per_peer"]
    return torch.randint(m - m // 2, m + m // 2 + 1, (world_size, world_size), generator=g).tolist()


def make_inputs(rank, world_size, seed, size, device="cpu"):
    counts = _pair_counts(world_size, seed, size)
    sent = [counts[rank][(rank + i) % world_size] for i in range(world_size)]
    received = [counts[(rank + i) % world_size][rank] for i in range(world_size)]
    seed_size = max(1, sum(received) // 2)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    grad = torch.randn(sum(sent), size["hidden"], generator=g, device=device).to(getattr(torch, size["dtype"]))
    ids = torch.randint(0, seed_size, (sum(received),), generator=g, device=device)
    return grad, ids, seed_size, sent, received


def roofline(world_size, size):
    m, h = size["rows_per_peer"], size["hidden"]
    row = h * _BYTES[size["dtype"]]
    least_pair = m - m // 2  # the smallest count any pair can draw
    return {
        # at least least_pair gradient rows go back to each of the world_size-1 peers
        "nvlink_bytes_per_rank": (world_size - 1) * least_pair * row,
        # one add per element of every received row
        "flops_per_rank": world_size * least_pair * h,
        # read the received rows, read-modify-write at most the local nodes (lower: write them once)
        "hbm_bytes_per_rank": world_size * least_pair * row * 1.5,
    }
