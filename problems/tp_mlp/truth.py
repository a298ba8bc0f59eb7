"""Ground truth for `tp_mlp`: every rank's output from all ranks' inputs, in one process."""

import torch.nn.functional as F


def expected(inputs, world_size):
    y = sum(F.gelu(x.double() @ w1.double(), approximate="tanh") @ w2.double() for x, w1, w2 in inputs)
    y = y.to(inputs[0][0].dtype)
    return [y.clone() for _ in range(world_size)]
