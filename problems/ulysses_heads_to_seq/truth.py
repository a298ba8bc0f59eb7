import torch


def expected(inputs, world_size):
    full = torch.cat([x for x, *_ in inputs], dim=2)  # all positions, all heads
    s = -(-full.shape[1] // world_size)
    padded = torch.zeros(full.shape[0], s * world_size, *full.shape[2:], dtype=full.dtype)
    padded[:, :full.shape[1]] = full
    return [padded[:, r * s:(r + 1) * s] for r in range(world_size)]
