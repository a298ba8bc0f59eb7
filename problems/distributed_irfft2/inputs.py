import math

import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    b, c, h, w = size["batch"], size["channels"], size["height"], size["width"]
    if h % world_size or w % world_size or w % 2:
        raise ValueError(f"height {h} and width {w} must be divisible by world size {world_size}, width even")
    # the spectrum of one real field drawn from a replicated stream, then this rank's rows
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    field = torch.randn(b, c, h, w, generator=g, device=device)
    spec = torch.fft.rfft2(field, s=(h, w), dim=(-2, -1), norm="ortho")
    hl = h // world_size
    return spec[:, :, rank * hl:(rank + 1) * hl].contiguous(), [h, w], [-2, -1], "ortho"


def roofline(world_size, size):
    b, c, h, w = size["batch"], size["channels"], size["height"], size["width"]
    local = b * c * h * w / world_size  # real output elements per rank
    return {
        # the output columns depend on every row of the spectrum: a rank must receive the
        # real information of (w-1)/w of its output block, 4 bytes per element
        "nvlink_bytes_per_rank": local * (world_size - 1) / world_size * 4,
        # a real-output 2-D inverse FFT: 2.5 n log2 n flops for n real points, this rank's share
        "flops_per_rank": 2.5 * local * math.log2(h * w),
        # read the complex half-spectrum rows, write the real output slab
        "hbm_bytes_per_rank": b * c * (h / world_size) * (w // 2 + 1) * 8 + local * 4,
    }
