import torch


def _quantize(x, bs):
    rows, cols = x.shape
    blocks = x.double().reshape(rows, cols // bs, bs)
    s = (blocks.abs().amax(dim=-1) / 448.0).float()
    safe = torch.where(s == 0, torch.ones_like(s), s).double()
    y = (blocks / safe.unsqueeze(-1)).float().to(torch.float8_e4m3fn).reshape(rows, cols)
    return y, s


def expected(inputs, world_size):
    parts = [_quantize(x, bs) for x, bs in inputs]
    y = torch.cat([p[0] for p in parts])
    s = torch.cat([p[1] for p in parts])
    return [(y.clone(), s.clone()) for _ in range(world_size)]
