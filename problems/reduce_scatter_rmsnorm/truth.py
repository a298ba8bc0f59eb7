import torch


def expected(inputs, world_size):
    gamma, eps = inputs[0][1].double(), inputs[0][2]
    h = gamma.numel()
    x = (sum(i[0].double() for i in inputs) / world_size).view(-1, h)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma
    rows = x.shape[0] // world_size
    dt = inputs[0][0].dtype
    return [y[r * rows:(r + 1) * rows].to(dt) for r in range(world_size)]
