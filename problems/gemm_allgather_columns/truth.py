import torch


def expected(inputs, world_size):
    a = inputs[0][0].double()
    c = torch.cat([(a @ b.double()).to(b.dtype) for _, b in inputs], dim=1)
    return [c.clone() for _ in range(world_size)]
