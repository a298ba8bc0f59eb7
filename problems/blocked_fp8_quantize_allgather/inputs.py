import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    rows, cols, bs = size["rows"], size["cols"], size["block_size"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # magnitudes that differ from block to block by orders of magnitude, as activations do
    scale = torch.exp(2.0 * torch.randn(rows, cols // bs, 1, generator=g, device=device))
    x = (torch.randn(rows, cols // bs, bs, generator=g, device=device) * scale).reshape(rows, cols)
    return x.to(getattr(torch, size["dtype"])), bs


def roofline(world_size, size):
    rows, cols, bs = size["rows"], size["cols"], size["block_size"]
    e = _BYTES[size["dtype"]]
    y_bytes, s_bytes = rows * cols, rows * cols // bs * 4
    return {
        # receive the other ranks' fp8 values and scales
        "nvlink_bytes_per_rank": (world_size - 1) * (y_bytes + s_bytes),
        # |x|, the block max and one division per element
        "flops_per_rank": 3.0 * rows * cols,
        # read x, write every rank's y and s
        "hbm_bytes_per_rank": rows * cols * e + world_size * (y_bytes + s_bytes),
    }
