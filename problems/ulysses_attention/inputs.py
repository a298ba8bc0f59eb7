import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    shape = (size["s_local"], world_size * size["heads_local"], size["d"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    q, k, v = (torch.randn(shape, generator=g, device=device).to(dt) for _ in range(3))
    return q, k, v


def roofline(world_size, size):
    s, hl, d = size["s_local"], size["heads_local"], size["d"]
    e = _BYTES[size["dtype"]]
    local = s * world_size * hl * d * e  # one of q/k/v/o on one rank
    big_s = world_size * s
    return {
        # q, k, v out and o back: (w-1)/w of each leaves the rank
        "nvlink_bytes_per_rank": 4 * (world_size - 1) / world_size * local,
        # causal attention on hl heads over the full sequence: half of 4 S^2 d flops per head
        "flops_per_rank": 2.0 * hl * big_s * big_s * d,
        # read q, k, v, write o, plus one write and read of each re-partitioned tensor
        "hbm_bytes_per_rank": 12 * local,
    }
