"""Ground truth for `allgather`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    full = torch.cat([x for (x,) in inputs])
    return [full.clone() for _ in range(world_size)]
