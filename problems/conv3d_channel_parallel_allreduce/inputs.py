import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _out_len(n, size):
    k, s, p, d = size["kernel"], size["stride"], size["padding"], size["dilation"]
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    ci, co, k = size["c_in"] // world_size, size["c_out"], size["kernel"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["batch"], ci, size["t"], size["h"], size["w"], generator=g, device=device)
    # this rank's slice of the input channels of the weight: unit-variance outputs overall
    weight = torch.randn(co, ci, k, k, k, generator=g, device=device) / (size["c_in"] * k ** 3) ** 0.5
    gb = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    bias = 0.1 * torch.randn(co, generator=gb, device=device)
    return (x.to(dt), weight.to(dt), bias.to(dt), int(size["stride"]), int(size["padding"]),
            int(size["dilation"]))


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    ci, co, k = size["c_in"] // world_size, size["c_out"], size["kernel"]
    outs = size["batch"] * co * _out_len(size["t"], size) * _out_len(size["h"], size) * _out_len(size["w"], size)
    ins = size["batch"] * ci * size["t"] * size["h"] * size["w"]
    return {
        # every rank needs the full sum of w partial outputs: either one output's worth of
        # partial sums arrives, or the other ranks' input and weight slices do (cheaper when
        # c_in/world is small; the rank then convolves everything itself)
        "nvlink_bytes_per_rank": float(min(outs, (world_size - 1) * (ins + co * ci * k ** 3)) * e),
        "flops_per_rank": 2.0 * outs * ci * k ** 3,
        # read x and the weight slice, write the output
        "hbm_bytes_per_rank": float((ins + co * ci * k ** 3 + outs) * e),
    }
