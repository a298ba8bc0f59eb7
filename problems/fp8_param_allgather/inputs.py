import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n = size["shard"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # parameter scale differs per shard (different layers), so do the fp8 scales
    sigma = 0.02 + 0.08 * torch.rand((), generator=g, device=device)
    params = (torch.randn(n, generator=g, device=device) * sigma).to(getattr(torch, size["dtype"]))
    # past amax values around the expected current amax: sometimes the history's max sets the
    # scale, sometimes the current amax does
    typical = float(sigma) * math.sqrt(2.0 * math.log(max(n, 2)))
    history = typical * (0.6 + 0.7 * torch.rand(size["history"], generator=g, device=device))
    return params, history


def roofline(world_size, size):
    p = size["shard"]
    e = _BYTES[size["dtype"]]
    return {
        # the least a rank can receive: the other ranks' fp8 bytes
        "nvlink_bytes_per_rank": (world_size - 1) * p * 1.0,
        # quantize its shard, dequantize every received element
        "flops_per_rank": world_size * p * 2.0,
        # read its shard, write the gathered bucket
        "hbm_bytes_per_rank": p * e + world_size * p * e,
    }
