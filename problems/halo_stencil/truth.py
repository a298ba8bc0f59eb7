"""Ground truth for `halo_stencil`: every rank's output from all ranks' inputs, in one process."""

import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    u = F.pad(torch.cat([i[0] for i in inputs]).double(), (1, 1, 1, 1))
    y = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return [part.to(inputs[0][0].dtype) for part in y.chunk(world_size)]
