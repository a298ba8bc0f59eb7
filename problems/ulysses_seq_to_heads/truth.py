import torch


def expected(inputs, world_size):
    full = torch.cat([x for x, *_ in inputs], dim=1)  # all positions, all heads
    n = inputs[0][3]
    hl = full.shape[2] // world_size
    return [full[:, :n, r * hl:(r + 1) * hl] for r in range(world_size)]
