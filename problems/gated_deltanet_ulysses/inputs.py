import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    b, s, h, dk, dv = size["batch"], size["seq"] // world_size, size["heads"], size["dk"], size["dv"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    q = torch.randn(b, s, h, dk, generator=g, device=device)
    k = torch.randn(b, s, h, dk, generator=g, device=device)
    v = torch.randn(b, s, h, dv, generator=g, device=device)
    gate = torch.randn(b, s, h, generator=g, device=device)
    beta = torch.sigmoid(torch.randn(b, s, h, generator=g, device=device))
    # per-head decay parameters (replicated; rank r receives the slice of its heads after the
    # all-to-all): A in [0.5, 4], dt_bias ~ N(0, 0.5) -> per-step decays from ~0.8 to ~0.01
    gp = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    a_log = math.log(0.5) + math.log(8.0) * torch.rand(h, generator=gp, device=device)
    dt_bias = 0.5 * torch.randn(h, generator=gp, device=device)
    hl = h // world_size
    heads = slice(rank * hl, (rank + 1) * hl)
    return (q.to(dt), k.to(dt), v.to(dt), gate.to(dt), beta.to(dt), a_log[heads].contiguous().to(dt),
            dt_bias[heads].contiguous().to(dt))


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    w = world_size
    b, s, h, dk, dv = size["batch"], size["seq"], size["heads"], size["dk"], size["dv"]
    local = b * (s // w) * h * (2 * dk + 2 * dv + 2)  # q, k, v, out, gate, beta of local positions
    return {
        # heads move to their owners and outputs move back: (w-1)/w of the local q, k, v, gate,
        # beta and output; or the recurrent state of all heads is passed along the sequence
        # (b*h*dk*dv fp32): whichever is smaller
        "nvlink_bytes_per_rank": min((w - 1) / w * local * e, b * h * dk * dv * 4.0),
        # per token and head: decay, k^T S, rank-1 update, q^T S: >= 7 dk dv flops
        "flops_per_rank": 7.0 * b * s * (h // w) * dk * dv,
        # read the local inputs, write the local output
        "hbm_bytes_per_rank": float(local * e),
    }
