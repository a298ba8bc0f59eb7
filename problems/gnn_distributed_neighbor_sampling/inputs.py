import math

import torch


def _graph(world_size, seed, size, device):
    """The whole graph, drawn from the seed alone (every rank draws the same): a random owner
    per node, in-degrees uniform on [min_degree, max_degree], random in-neighbours. Global CSC
    by destination id; an edge's id is its position in it."""
    n = size["num_nodes"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    owner = torch.randint(0, world_size, (n,), generator=g, device=device)
    degree = torch.randint(size["min_degree"], size["max_degree"] + 1, (n,), generator=g, device=device)
    colptr = torch.zeros(n + 1, dtype=torch.int64, device=device)
    colptr[1:] = torch.cumsum(degree, 0)
    row = torch.randint(0, n, (int(colptr[-1]),), generator=g, device=device)
    return owner, colptr, row


def make_inputs(rank, world_size, seed, size, device="cpu"):
    owner, colptr, row = _graph(world_size, seed, size, device)
    n = owner.numel()
    mine = (owner == rank).nonzero().squeeze(1)  # owned nodes in id order
    # position of each node among its owner's nodes (the owner's local id)
    onehot = torch.nn.functional.one_hot(owner, world_size)
    local = (torch.cumsum(onehot, 0) - onehot).gather(1, owner.unsqueeze(1)).squeeze(1)
    deg = colptr[mine + 1] - colptr[mine]
    local_colptr = torch.zeros(mine.numel() + 1, dtype=torch.int64, device=device)
    local_colptr[1:] = torch.cumsum(deg, 0)
    starts = torch.repeat_interleave(colptr[mine], deg)
    offsets = torch.arange(int(deg.sum()), device=device) - torch.repeat_interleave(local_colptr[:-1], deg)
    eid = starts + offsets
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    seeds = torch.randperm(n, generator=g, device=device)[:size["seeds"]]  # distinct, any owner
    return seeds, list(size["fanouts"]), local_colptr, row[eid], eid, owner, local


def roofline(world_size, size):
    s = size["seeds"]
    p = (world_size - 1) / world_size
    # remote seeds are binomial(s, (w-1)/w): six standard deviations under the mean bounds them
    remote = max(0.0, s * p - 6.0 * math.sqrt(s * p * (1 - p)))
    first = min(size["fanouts"][0], size["min_degree"])  # neighbours every seed yields
    return {
        # each remote seed's first-hop neighbours and their edge ids (8 bytes each) come back
        "nvlink_bytes_per_rank": remote * first * 16,
        "flops_per_rank": 0.0,
        # write at least the seeds and their first-hop (row, col, edge) entries
        "hbm_bytes_per_rank": s * 8 + s * first * 24,
    }
