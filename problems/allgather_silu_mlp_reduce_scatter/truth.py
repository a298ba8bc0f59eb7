import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    x = torch.cat([x for x, _, _ in inputs], dim=1).double()
    w1, w2 = inputs[0][1].double(), inputs[0][2].double()
    y = (F.silu(x @ w1) @ w2).to(inputs[0][0].dtype)
    return list(y.chunk(world_size))
