import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    b, s, h, nh = size["batch"], size["seq_local"], size["hidden"], size["num_heads"]
    if nh % world_size or h % nh:
        raise ValueError(f"num_heads {nh} must divide by world size {world_size} and divide hidden {h}")
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 393_939)
    # q, k, v entries ~N(0, 1); the output ~N(0, <1)
    w_qkv = (torch.randn(3 * h, h, generator=gw, device=device) / math.sqrt(h)).to(dt)
    w_o = (torch.randn(h, h, generator=gw, device=device) / math.sqrt(h)).to(dt)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(b, s, h, generator=g, device=device).to(dt)
    return x, w_qkv, w_o, nh, bool(size["causal"])


def roofline(world_size, size):
    b, s, h, nh = size["batch"], size["seq_local"], size["hidden"], size["num_heads"]
    e = _BYTES[size["dtype"]]
    big_s = world_size * s
    attn = 4.0 * b * nh * big_s * big_s * (h // nh) / world_size  # QK^T and PV, this rank's share
    if size["causal"]:
        attn /= 2
    return {
        # a rank's outputs depend on other ranks' positions: at least its own output-sized
        # share, (w-1)/w of [b, s, hidden], must arrive in some form (Ulysses moves 4x that)
        "nvlink_bytes_per_rank": (world_size - 1) / world_size * b * s * h * e,
        # QKV and output projections of the rank's positions plus its share of attention
        "flops_per_rank": 2.0 * b * s * h * 4 * h + attn,
        # read both weight matrices and the input, write the output
        "hbm_bytes_per_rank": (4.0 * h * h + 2.0 * b * s * h) * e,
    }
