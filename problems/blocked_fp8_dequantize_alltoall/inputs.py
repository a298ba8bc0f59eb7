import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    rows, cols, bs = size["rows"], size["cols"], size["block_size"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # fp8 payloads spread over e4m3's range, as a quantiser leaves them (|y| <= 448)
    y = (torch.randn(world_size, rows, cols, generator=g, device=device) * 100.0).clamp(-448.0, 448.0)
    s = torch.exp(torch.randn(world_size, rows * cols // bs, generator=g, device=device)) * 1e-2
    return y.to(torch.float8_e4m3fn), s, bs


def roofline(world_size, size):
    rows, cols, bs = size["rows"], size["cols"], size["block_size"]
    chunk = rows * cols
    return {
        # ship the fp8 chunks and their scales; dequantise on arrival
        "nvlink_bytes_per_rank": (world_size - 1) * (chunk + chunk // bs * 4),
        # one multiply per element
        "flops_per_rank": float(world_size * chunk),
        # read every fp8 chunk and scale, write the fp32 result
        "hbm_bytes_per_rank": world_size * (chunk + chunk // bs * 4 + 4 * chunk),
    }
