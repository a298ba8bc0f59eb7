"""Ground truth for `gnn_feature_exchange`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    table = torch.cat([i[0] for i in inputs])
    return [table[ids] for _, ids in inputs]
