import torch


def _rec(x, bs):
    x = x.double()
    n = x.numel()
    padded = torch.zeros(-(-n // bs) * bs, dtype=torch.float64)
    padded[:n] = x
    blocks = padded.view(-1, bs)
    scale = blocks.abs().max(dim=1, keepdim=True).values.clamp(min=1e-8) / 127
    q = torch.clamp(torch.round(blocks / scale), -127, 127)
    return (q * scale).reshape(-1)[:n]


def expected(inputs, world_size):
    mean = sum(_rec(x, bs) for x, bs in inputs) / world_size
    out = mean.to(inputs[0][0].dtype)
    return [out for _ in range(world_size)]
