import torch


def _rope(t, cos, sin):
    half = t.shape[-1] // 2
    rotated = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
    return t * cos[:, :, None] + rotated * sin[:, :, None]


def expected(inputs, world_size):
    q, k, cos, sin = (torch.cat([i[n] for i in inputs], dim=1).double() for n in range(4))
    dt = inputs[0][0].dtype
    pair = (_rope(q, cos, sin).to(dt), _rope(k, cos, sin).to(dt))
    return [tuple(t.clone() for t in pair) for _ in range(world_size)]
