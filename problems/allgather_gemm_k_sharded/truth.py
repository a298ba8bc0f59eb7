import torch


def expected(inputs, world_size):
    a = torch.cat([a for a, _ in inputs], dim=1).double()
    c = (a @ inputs[0][1].double()).to(inputs[0][0].dtype)
    return [c.clone() for _ in range(world_size)]
