import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    n, ci, co, h, w = size["n"], size["c_in"], size["c_out"], size["h_local"], size["w"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(n, ci, h, w, generator=g, device=device)
    # the filter is replicated: drawn from a seed-only stream; unit-variance outputs
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    weight = torch.randn(co, ci, 3, 3, generator=gw, device=device) / (9 * ci) ** 0.5
    return x.to(dt), weight.to(dt)


def roofline(world_size, size):
    n, ci, co, h, w = size["n"], size["c_in"], size["c_out"], size["h_local"], size["w"]
    e = _BYTES[size["dtype"]]
    return {
        # an interior rank sends one image row per channel to each neighbour
        "nvlink_bytes_per_rank": 2.0 * n * ci * w * e,
        # 2 flops per multiply-add, 9 c_in per output element
        "flops_per_rank": 2.0 * n * co * h * w * ci * 9,
        # read x and the filter, write the output
        "hbm_bytes_per_rank": (n * ci * h * w + co * ci * 9 + n * co * h * w) * e,
    }
