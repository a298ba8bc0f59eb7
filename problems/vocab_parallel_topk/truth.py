"""Ground truth for `vocab_parallel_topk`: every rank's output from all ranks' inputs, in one process."""

import torch

K = 50


def expected(inputs, world_size):
    values, index = torch.cat([i[0] for i in inputs], dim=1).topk(K, dim=1)
    return [(values.clone(), index.clone()) for _ in range(world_size)]
