"""Ground truth for `vocab_parallel_cross_entropy`: every rank's output from all ranks' inputs, in one process."""

import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    logits = torch.cat([i[0] for i in inputs], dim=1).double()
    loss = F.cross_entropy(logits, inputs[0][1], reduction="none").to(inputs[0][0].dtype)
    return [loss.clone() for _ in range(world_size)]
