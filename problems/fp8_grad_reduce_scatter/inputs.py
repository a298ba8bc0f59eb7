import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n = size["shard"] * world_size
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # gradient scale differs per rank (different micro-batches), so do the fp8 scales
    sigma = 0.5 + 0.5 * torch.rand((), generator=g, device=device)
    grads = (torch.randn(n, generator=g, device=device) * sigma).to(getattr(torch, size["dtype"]))
    # past amax values around the expected current amax: sometimes the history's max sets the
    # scale, sometimes the current amax does
    typical = float(sigma) * math.sqrt(2.0 * math.log(max(n, 2)))
    history = typical * (0.6 + 0.7 * torch.rand(size["history"], generator=g, device=device))
    return grads, history


def roofline(world_size, size):
    p = size["shard"]
    e = _BYTES[size["dtype"]]
    return {
        # the least a rank can receive: the other ranks' fp8 bytes for its shard
        "nvlink_bytes_per_rank": (world_size - 1) * p * 1.0,
        # quantize every element (divide), dequantize and add the received ones
        "flops_per_rank": world_size * p * 3.0,
        # read the bucket once (the amax needs it), write the shard
        "hbm_bytes_per_rank": world_size * p * e + p * e,
    }
