import torch
import torch.nn.functional as F


def make_inputs(rank, world_size, seed, size, device="cpu"):
    b, d = size["batch"], size["dim"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    img = F.normalize(torch.randn(b, d, generator=g, device=device), dim=-1)
    # matching captions are correlated with their images (cosine ~0.7), others are not
    txt = F.normalize(img + 0.7 * F.normalize(torch.randn(b, d, generator=g, device=device), dim=-1), dim=-1)
    gs = torch.Generator().manual_seed(seed * 1_000_003 + 999_983)  # replicated scalars
    scale = float(10.0 * (0.8 + 0.4 * torch.rand((), generator=gs)))
    bias = float(-10.0 * (0.8 + 0.4 * torch.rand((), generator=gs)))
    return img.contiguous(), txt.contiguous(), scale, bias


def roofline(world_size, size):
    b, d = size["batch"], size["dim"]
    return {
        # every (image shard, text shard) pair of different ranks must meet on some rank: at
        # least (world_size - 1) / 2 shards of batch x dim fp32 through each rank
        "nvlink_bytes_per_rank": (world_size - 1) / 2 * b * d * 4,
        # this rank's share of all logits, plus a softplus per logit (counted as 1 flop)
        "flops_per_rank": 2.0 * b * b * d * world_size + b * b * world_size,
        # read its own features
        "hbm_bytes_per_rank": 2.0 * b * d * 4,
    }
