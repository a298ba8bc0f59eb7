"""Ground truth for `allreduce`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    total = sum(x for (x,) in inputs)
    return [total.clone() for _ in range(world_size)]
