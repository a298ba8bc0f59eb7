import torch

TOPK = 50


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    logits = 3.0 * torch.randn(size["tokens"], size["vocab_local"], generator=g, device=device)
    return (logits.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    t, vl = size["tokens"], size["vocab_local"]
    return {
        # receive the w-1 other ranks' local top-50 (value + int64 index) per token
        "nvlink_bytes_per_rank": (world_size - 1) * t * TOPK * (4 + 8),
        # about one comparison per logit for a selection pass
        "flops_per_rank": float(t * vl),
        # read the logits once, write the results
        "hbm_bytes_per_rank": t * vl * 4 + t * TOPK * 12,
    }
