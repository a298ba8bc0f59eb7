import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    t, h_local = size["tokens"], size["hidden"] // world_size
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # rows of different scales, so the per-row statistic matters
    x = torch.randn(t, h_local, generator=g, device=device) * torch.exp(
        torch.randn(t, 1, generator=g, device=device))
    weight = 1.0 + 0.1 * torch.randn(h_local, generator=g, device=device)
    return x.to(dt), weight.to(dt), float(size["eps"])


def roofline(world_size, size):
    t, h_local = size["tokens"], size["hidden"] // world_size
    e = _BYTES[size["dtype"]]
    return {
        # all-reduce of one fp32 sum of squares per token
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * t * 4,
        # square-and-add, then scale and weight per element
        "flops_per_rank": 4.0 * t * h_local,
        # read x and write the output (the weight is small)
        "hbm_bytes_per_rank": (2 * t * h_local + h_local) * e,
    }
