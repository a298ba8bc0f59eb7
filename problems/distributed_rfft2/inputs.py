import math

import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    b, h, w = size["batch"], size["height"], size["width"]
    if h % world_size or w % world_size:
        raise ValueError(f"height {h} and width {w} must be divisible by world size {world_size}")
    wl = w // world_size
    # the whole field from one replicated stream, then this rank's columns
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    field = torch.randn(b, h, w, generator=g, device=device)
    return field[:, :, rank * wl:(rank + 1) * wl].contiguous(), [h, w], [1, 2], "ortho"


def roofline(world_size, size):
    b, h, w = size["batch"], size["height"], size["width"]
    local = b * h * w / world_size  # real input elements per rank
    return {
        # the spectrum rows a rank returns depend on every column: it must receive the other
        # ranks' share of them, at least the real information (4 bytes per element) of
        # (w-1)/w of its output block
        "nvlink_bytes_per_rank": local * (world_size - 1) / world_size * 4,
        # a real-input 2-D FFT: 2.5 n log2 n flops for n real points, this rank's share
        "flops_per_rank": 2.5 * local * math.log2(h * w),
        # read the real slab, write the complex output block
        "hbm_bytes_per_rank": local * 4 + b * (h / world_size) * (w // 2 + 1) * 8,
    }
