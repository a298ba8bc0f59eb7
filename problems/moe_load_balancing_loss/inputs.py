import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    layers, b, s, e = size["layers"], size["batch"], size["seq"], size["experts"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # a per-layer expert bias (std 1) on top of per-token noise: routing is uneven, as trained
    # routers are, and differs between layers
    logits = [(torch.randn(e, generator=g, device=device)
               + 1.5 * torch.randn(b * s, e, generator=g, device=device)).to(dt) for _ in range(layers)]
    # right padding: each sequence keeps between a quarter and all of its positions
    lengths = torch.randint(max(1, s // 4), s + 1, (b, 1), generator=g, device=device)
    mask = (torch.arange(s, device=device)[None, :] < lengths).long()
    return logits, e, size["top_k"], mask


def roofline(world_size, size):
    n = size["layers"] * size["batch"] * size["seq"]
    e = size["experts"]
    return {
        # one float32 scalar all-reduced
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 4,
        # softmax (max, sub, exp, sum, div) plus the masked sum of probabilities: ~7 per logit
        "flops_per_rank": 7.0 * n * e,
        # read every logit once (the mask is tiny)
        "hbm_bytes_per_rank": 4.0 * n * e,
    }
