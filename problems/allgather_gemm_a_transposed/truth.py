import torch


def expected(inputs, world_size):
    a = torch.cat([a_t for a_t, _ in inputs], dim=0).t().double()
    c = (a @ inputs[0][1].double()).to(inputs[0][0].dtype)
    return [c.clone() for _ in range(world_size)]
