"""Ground truth for `vocab_parallel_embedding`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    table = torch.cat([i[0] for i in inputs])
    rows = table[inputs[0][1]]
    return [rows.clone() for _ in range(world_size)]
