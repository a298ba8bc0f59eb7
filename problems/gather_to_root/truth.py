import torch


def expected(inputs, world_size):
    dst = inputs[0][1]
    full = torch.stack([x for x, _ in inputs])
    return [full if r == dst else None for r in range(world_size)]
