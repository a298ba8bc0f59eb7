import math

import torch

# pkb:include ../_shared/mlp_step/exact_relu.py


def _shapes(size):
    d_in, hid, d_out = size["d_in"], size["hidden"], size["d_out"]
    return [(hid, d_in), (hid,), (d_out, hid), (d_out,)]


def _grad_scales(size):
    """Rough rms of each parameter's gradient for this MLP and MSE-mean loss (unit inputs
    and targets): d loss/d out ~ 2.4 / (batch * d_out), then through the layers."""
    b, hid, d_out = size["batch"], size["hidden"], size["d_out"]
    d_out_rms = 2.4 / (b * d_out)
    d_pre_rms = math.sqrt(d_out / hid) * d_out_rms * math.sqrt(0.5)
    w1 = math.sqrt(b) * d_pre_rms
    w2 = math.sqrt(b) * d_out_rms * math.sqrt(0.5)
    return [w1, w1, w2, math.sqrt(b) * d_out_rms]


def _state(g, size, device, dt):
    """Parameters and Adam moments of a model early in training: weights ~N(0, 1/fan_in),
    biases 0.1 N(0, 1); first moments at the gradient's scale, second moments ~1% of the
    squared gradient, so this step's gradient moves both moments and the update visibly."""
    params, m, v = [], [], []
    for i, (s, gs) in enumerate(zip(_shapes(size), _grad_scales(size))):
        p = (torch.randn(s, generator=g, device=device) / math.sqrt(s[-1]) if len(s) == 2
             else 0.1 * torch.randn(s, generator=g, device=device))
        # the first layer on exact grids: see exact_relu.py
        p = grid_w1(p) if i == 0 else grid_b1(p, size["d_in"]) if i == 1 else p
        params.append(p.to(dt))
        m.append((gs * torch.randn(s, generator=g, device=device)).to(dt))
        v.append((0.01 * gs * gs * (0.5 + torch.randn(s, generator=g, device=device) ** 2)).to(dt))
    return params, m, v


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    # rank 0's state is the model; the others hold stale values that the broadcast replaces
    gs = torch.Generator(device=device).manual_seed(seed * 1_000_003 + (0 if rank == 0 else 50_000 + rank))
    params, m, v = _state(gs, size, device, dt)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = grid_x(torch.randn(size["batch"], size["d_in"], generator=g, device=device)).to(dt)
    y = torch.randn(size["batch"], size["d_out"], generator=g, device=device).to(dt)
    return (x, y, *params, *m, *v, 1e-3, 0.9, 0.999, 1e-8, 1 + seed % 7)


def roofline(world_size, size):
    b, d_in, hid, d_out = size["batch"], size["d_in"], size["hidden"], size["d_out"]
    n = hid * d_in + hid + d_out * hid + d_out
    return {
        # a rank other than 0 has none of the current parameters and moments: it receives all
        # 3n values; plus the gradient all-reduce (reduce-scatter + all-gather)
        "nvlink_bytes_per_rank": 3 * 4.0 * n + 2 * (world_size - 1) / world_size * 4 * n,
        # forward (2 GEMMs) and backward (dW2, dh, dW1: no dX) on this rank's batch; Adam ~10 per parameter
        "flops_per_rank": 4.0 * b * d_in * hid + 6.0 * b * hid * d_out + 10.0 * n,
        # write the new parameters and moments (rank 0's inputs may be read over NVLink), read the batch
        "hbm_bytes_per_rank": 3 * 4.0 * n + 4.0 * b * (d_in + d_out),
    }
