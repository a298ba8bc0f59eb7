import torch


def expected(inputs, world_size):
    """inputs[r] = (idx, value) of rank r."""
    outs = []
    for r in range(world_size):
        keep = [idx % world_size == r for idx, _ in inputs]
        outs.append((torch.cat([idx[k] for (idx, _), k in zip(inputs, keep)]),
                     torch.cat([v[k] for (_, v), k in zip(inputs, keep)])))
    return outs
