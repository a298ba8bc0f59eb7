import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _total_nodes(world_size, size):
    # the last shard is a third shorter than the others (uneven range partition)
    return world_size * size["shard_rows"] - size["shard_rows"] // 3


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    total = _total_nodes(world_size, size)
    shard = -(-total // world_size)
    rows = max(0, min(shard, total - rank * shard))
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    table = torch.randn(rows, size["embed_dim"], generator=g, device=device).to(dt)
    ids = torch.randint(0, total, (size["queries"],), generator=g, device=device)
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)  # replicated
    proj = (torch.randn(size["embed_dim"], size["out_dim"], generator=gw, device=device)
            / math.sqrt(size["embed_dim"])).to(dt)
    return table, ids, proj, total


def roofline(world_size, size):
    q, d, o = size["queries"], size["embed_dim"], size["out_dim"]
    e = _BYTES[size["dtype"]]
    # uniform ids: the number owned elsewhere is binomial(q, ~(w-1)/w); six standard deviations
    # under the mean is a bound no seed gets below
    p = (world_size - 1) / world_size
    remote = max(0.0, q * p - 6.0 * math.sqrt(q * p * (1 - p)))
    return {
        # the rows (or their projections: out_dim values each) of remote ids must arrive
        "nvlink_bytes_per_rank": remote * min(d, o) * e,
        "flops_per_rank": 2.0 * q * d * o,
        # read the local rows it is asked for (~q), the ids, the projection; write the output
        "hbm_bytes_per_rank": q * d * e + q * 8 + d * o * e + q * o * e,
    }
