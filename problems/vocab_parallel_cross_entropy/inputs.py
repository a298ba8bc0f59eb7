import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    t, vl = size["tokens"], size["vocab_local"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    logits = 2.0 * torch.randn(t, vl, generator=g, device=device)
    # targets are the same on every rank: drawn from a seed-only stream
    gt = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    target = torch.randint(0, world_size * vl, (t,), generator=gt, device=device)
    return logits.to(dt), target


def roofline(world_size, size):
    t, vl = size["tokens"], size["vocab_local"]
    return {
        # three float32 values per token all-reduced (max, sum of exp, target logit)
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 3 * t * 4,
        # subtract, exp, add per logit (exp counted as one flop)
        "flops_per_rank": 3.0 * t * vl,
        # read the logits once (an online max/sum pass), write the losses
        "hbm_bytes_per_rank": t * vl * _BYTES[size["dtype"]] + t * 4,
    }
