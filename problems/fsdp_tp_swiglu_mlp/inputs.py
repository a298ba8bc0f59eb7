import math

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def mesh(world_size):
    """(n_tp, n_fsdp): the smallest n_tp >= 2 leaving n_fsdp >= 2, else (1, world)."""
    for n_tp in range(2, world_size):
        if world_size % n_tp == 0 and world_size // n_tp >= 2:
            return n_tp, world_size // n_tp
    return 1, world_size


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    t, d, ff = size["tokens"], size["d_model"], size["d_ff"]
    n_tp, n_fsdp = mesh(world_size)
    if d % n_fsdp or ff % n_tp:
        raise ValueError(f"d_model {d} / n_fsdp {n_fsdp} or d_ff {ff} / n_tp {n_tp} does not divide")
    tp, fs = rank % n_tp, rank // n_tp
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 717_171)
    # x W1, x W2 ~N(0, 1); y ~N(0, ~0.5)
    w1 = torch.randn(d, ff, generator=gw, device=device) / math.sqrt(d)
    w2 = torch.randn(d, ff, generator=gw, device=device) / math.sqrt(d)
    w3 = torch.randn(ff, d, generator=gw, device=device) / math.sqrt(ff)
    dr, fc = d // n_fsdp, ff // n_tp
    gx = torch.Generator(device=device).manual_seed(seed * 1_000_003 + fs)  # per FSDP rank
    x = torch.randn(t, d, generator=gx, device=device).to(dt)
    return (x,
            w1[fs * dr:(fs + 1) * dr, tp * fc:(tp + 1) * fc].to(dt).contiguous(),
            w2[fs * dr:(fs + 1) * dr, tp * fc:(tp + 1) * fc].to(dt).contiguous(),
            w3[tp * fc:(tp + 1) * fc, fs * dr:(fs + 1) * dr].to(dt).contiguous(),
            n_tp, n_fsdp)


def roofline(world_size, size):
    t, d, ff = size["tokens"], size["d_model"], size["d_ff"]
    e = _BYTES[size["dtype"]]
    n_tp, n_fsdp = mesh(world_size)
    tp_weights = 3 * d * ff / n_tp * e  # this rank's TP slice of the three matrices
    return {
        # receive the other FSDP ranks' pieces of the TP slice; all-reduce y over the TP group
        "nvlink_bytes_per_rank": (n_fsdp - 1) / n_fsdp * tp_weights + 2 * (n_tp - 1) / n_tp * t * d * e,
        # three GEMMs on the TP slice
        "flops_per_rank": 2.0 * t * d * (ff / n_tp) * 3,
        # read the local shards and x, write y (gathered weights may be read from peers)
        "hbm_bytes_per_rank": tp_weights / n_fsdp + 2.0 * t * d * e,
    }
