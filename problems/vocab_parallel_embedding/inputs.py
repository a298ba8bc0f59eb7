import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    t, vl, h = size["tokens"], size["vocab_local"], size["hidden"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    weight = torch.randn(vl, h, generator=g, device=device)
    # ids are the same on every rank: drawn from a seed-only stream
    gi = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    ids = torch.randint(0, world_size * vl, (t,), generator=gi, device=device)
    return weight.to(dt), ids


def roofline(world_size, size):
    t, h = size["tokens"], size["hidden"]
    b = t * h * _BYTES[size["dtype"]]
    return {
        # each rank must receive the (w-1)/w of the rows owned by others (uniform ids)
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * b,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the owned rows (1/w of the output), write the full output
        "hbm_bytes_per_rank": b / world_size + b,
    }
