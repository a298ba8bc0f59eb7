import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _tp(world_size, size):
    # upstream's layout: tensor parallel pairs once there are at least 4 ranks
    return size["tp"] if world_size >= 2 * size["tp"] else 1


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    tp = _tp(world_size, size)
    b, h, dk, dv = size["batch"], size["heads"], size["dk"], size["dv"]
    s = size["seq"] // (world_size // tp)
    g_ = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    q = torch.randn(b, s, h, dk, generator=g_, device=device)
    k = torch.randn(b, s, h, dk, generator=g_, device=device)
    v = torch.randn(b, s, h, dv, generator=g_, device=device)
    g = torch.randn(b, s, h, dk, generator=g_, device=device)
    beta = torch.randn(b, s, h, generator=g_, device=device)
    # replicated gate parameters: exp(a_log) in [e^-1, e], dt_bias ~ N(-2, 0.5), so per-step
    # channel decays exp(-5 * sigmoid(...)) spread from ~0.95 to ~0.1
    gp = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    a_log = 2.0 * torch.rand(h, generator=gp, device=device) - 1.0
    dt_bias = -2.0 + 0.5 * torch.randn(h * dk, generator=gp, device=device)
    return (q.to(dt), k.to(dt), v.to(dt), g.to(dt), beta.to(dt), a_log.to(dt), dt_bias.to(dt), tp,
            float(size["lower_bound"]))


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    tp = _tp(world_size, size)
    cp = world_size // tp
    b, h, dk, dv, seq = size["batch"], size["heads"], size["dk"], size["dv"], size["seq"]
    s = seq // cp
    per_pos = b * h * (3 * dk + dv + 1)  # q, k, g, v, beta per position
    # the last CP rank needs the state entering its block: the earlier positions' inputs, or a
    # carried state of b*h*dk*dv fp32 values, whichever is smaller; the TP pair's output sum
    # needs the partner's output block (or its inputs)
    cp_bytes = min((cp - 1) * s * per_pos * e, b * h * dk * dv * 4.0) if cp > 1 else 0.0
    tp_bytes = b * s * h * dv * e if tp > 1 else 0.0
    return {
        "nvlink_bytes_per_rank": cp_bytes + tp_bytes,
        # per own position and head: channel decay, k^T S, rank-1 update, q^T S: >= 7 dk dv
        "flops_per_rank": 7.0 * b * s * h * dk * dv,
        # read the local inputs, write the local output
        "hbm_bytes_per_rank": float(s * per_pos * e + b * s * h * dv * e),
    }
