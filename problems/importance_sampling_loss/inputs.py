import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    t, h, v = size["tokens"], size["hidden"], size["vocab"]
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 424_242)
    # unit-variance logits: log-probs near -log(vocab), as for a model that is not sure
    weight = (torch.randn(v, h, generator=gw, device=device) / math.sqrt(h)).to(dt)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    hidden = torch.randn(t, h, generator=g, device=device).to(dt)
    labels = torch.randint(0, v, (t,), generator=g, device=device)
    ignored = torch.rand(t, generator=g, device=device) < 0.1
    ignored[0] = False  # every rank trains on at least one token
    labels = labels.masked_fill(ignored, -100)
    # the sampler's log-probs sit near the current policy's: ratios spread around 1
    old = -math.log(v) - 0.5 + 0.5 * torch.randn(t, generator=g, device=device)
    adv = torch.randn(t, generator=g, device=device)
    return hidden, weight, labels, old, adv, -100


def roofline(world_size, size):
    t, h, v = size["tokens"], size["hidden"], size["vocab"]
    e = _BYTES[size["dtype"]]
    return {
        # 7 float32 scalars all-reduced (5 sums, a min, a max), packable into one
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 7 * 4,
        # the LM-head matmul dominates
        "flops_per_rank": 2.0 * t * h * v,
        # read the hidden states and the LM head once (the logits can stay on chip)
        "hbm_bytes_per_rank": (t * h + v * h) * e,
    }
