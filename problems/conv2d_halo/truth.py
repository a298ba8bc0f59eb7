"""Ground truth for `conv2d_halo`: every rank's output from all ranks' inputs, in one process."""

import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    x = torch.cat([i[0] for i in inputs], dim=2).double()
    y = F.conv2d(x, inputs[0][1].double(), padding=1)
    return [part.to(inputs[0][0].dtype) for part in y.chunk(world_size, dim=2)]
