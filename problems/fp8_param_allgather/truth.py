import torch


def _recon(x, history):
    new = torch.cat([history[1:], x.abs().max().float().reshape(1)])
    scale = new.max() / 448.0
    q = (x.float() / scale).to(torch.float8_e4m3fn)
    return (q.double() * scale.double()).to(x.dtype), new


def expected(inputs, world_size):
    """inputs[r] = (flat_param_shard, amax_history) of rank r."""
    recons = [_recon(x, h) for x, h in inputs]
    full = torch.cat([rc for rc, _ in recons])
    return [(full.clone(), recons[r][1]) for r in range(world_size)]
