import torch


def _recon(grads, history):
    new = torch.cat([history[1:], grads.abs().max().float().reshape(1)])
    scale = new.max() / 448.0
    q = (grads.float() / scale).to(torch.float8_e4m3fn)
    return q.double() * scale.double(), new


def expected(inputs, world_size):
    """inputs[r] = (flat_grads, amax_history) of rank r."""
    recons = [_recon(g, h) for g, h in inputs]
    # recon is rounded to the gradient dtype before the reduction, as the description says
    dtype = inputs[0][0].dtype
    total = sum(rc.to(dtype).double() for rc, _ in recons) / world_size
    p = total.numel() // world_size
    return [(total[r * p:(r + 1) * p].to(dtype), recons[r][1]) for r in range(world_size)]
