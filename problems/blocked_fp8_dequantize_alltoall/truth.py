import torch


def expected(inputs, world_size):
    deq = []
    for y, s, bs in inputs:
        x = y.double().reshape(world_size, -1, bs) * s.double().reshape(world_size, -1, 1)
        deq.append(x.reshape(y.shape).float())
    return [torch.stack([deq[j][r] for j in range(world_size)]) for r in range(world_size)]
