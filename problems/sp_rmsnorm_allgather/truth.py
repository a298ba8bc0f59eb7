"""Ground truth for `sp_rmsnorm_allgather`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    x = torch.cat([x for x, _ in inputs]).double()
    weight = inputs[0][1].double()
    y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight).to(inputs[0][0].dtype)
    return [y.clone() for _ in range(world_size)]
