import torch


def expected(inputs, world_size):
    x = inputs[0][0].double()
    w = torch.cat([i[1] for i in inputs]).double()
    b = torch.cat([i[2] for i in inputs]).double()
    out = (x @ w.t() + b).to(inputs[0][0].dtype)
    return [out for _ in range(world_size)]
