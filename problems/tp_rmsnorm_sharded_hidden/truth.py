import torch


def expected(inputs, world_size):
    x = torch.cat([i[0] for i in inputs], dim=1).double()
    eps = inputs[0][2]
    normed = (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)).to(inputs[0][0].dtype)
    return [w * part for (_, w, _), part in zip(inputs, normed.chunk(world_size, dim=1))]
