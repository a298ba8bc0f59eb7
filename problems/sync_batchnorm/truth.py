"""Ground truth for `sync_batchnorm`: every rank's output from all ranks' inputs, in one process."""

import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    x = torch.cat([i[0] for i in inputs]).double()
    weight, bias = inputs[0][1].double(), inputs[0][2].double()
    y = F.batch_norm(x, None, None, weight, bias, training=True, eps=1e-5)
    return [part.to(inputs[0][0].dtype) for part in y.chunk(world_size)]
