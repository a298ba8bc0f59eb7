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


def _flat_state(g, size, device, dt):
    """Flat parameters and Adam moments (in W1, b1, W2, b2 order) of a model early in
    training: weights ~N(0, 1/fan_in), biases 0.1 N(0, 1); first moments at the gradient's
    scale, second moments ~1% of the squared gradient, so this step's gradient moves both
    moments and the update visibly."""
    params, m, v = [], [], []
    for i, (s, gs) in enumerate(zip(_shapes(size), _grad_scales(size))):
        p = (torch.randn(s, generator=g, device=device) / math.sqrt(s[-1]) if len(s) == 2
             else 0.1 * torch.randn(s, generator=g, device=device))
        # the first layer on exact grids: see exact_relu.py
        p = grid_w1(p) if i == 0 else grid_b1(p, size["d_in"]) if i == 1 else p
        params.append(p.reshape(-1))
        m.append(gs * torch.randn(s, generator=g, device=device).reshape(-1))
        v.append(0.01 * gs * gs * (0.5 + torch.randn(s, generator=g, device=device).reshape(-1) ** 2))
    return (torch.cat(params).to(dt), torch.cat(m).to(dt), torch.cat(v).to(dt))


def _numel(size):
    return sum(math.prod(s) for s in _shapes(size))


def _batch(rank, seed, size, device, dt):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = grid_x(torch.randn(size["batch"], size["d_in"], generator=g, device=device)).to(dt)
    y = torch.randn(size["batch"], size["d_out"], generator=g, device=device).to(dt)
    return x, y


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    n = _numel(size)
    if n % world_size:
        raise ValueError(f"{n} parameters do not split evenly over {world_size} ranks")
    part = n // world_size
    g0 = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 0)
    flat_p, flat_m, flat_v = _flat_state(g0, size, device, dt)
    x, y = _batch(rank, seed, size, device, dt)
    sl = slice(rank * part, (rank + 1) * part)
    shapes = [list(s) for s in _shapes(size)]
    return (x, y, flat_p[sl].clone(), shapes, flat_m[sl].clone(), flat_v[sl].clone(),
            1e-3, 0.9, 0.999, 1e-8, 0.01, 1 + seed % 7)


def roofline(world_size, size):
    b, d_in, hid, d_out = size["batch"], size["d_in"], size["hidden"], size["d_out"]
    n = _numel(size)
    frac = (world_size - 1) / world_size
    return {
        # all-gather the parameters, reduce-scatter the gradients
        "nvlink_bytes_per_rank": 4.0 * n * (frac + frac),
        # forward and backward (dW2, dh, dW1: no dX) on this rank's batch; AdamW on the shard (~12 flops each)
        "flops_per_rank": 4.0 * b * d_in * hid + 6.0 * b * hid * d_out + 12.0 * n / world_size,
        # read and write the shard's parameters and moments, read the batch (gathered weights
        # and gradients may stay in peers' memory, read over NVLink)
        "hbm_bytes_per_rank": 4.0 * 6 * n / world_size + 4.0 * b * (d_in + d_out),
    }
