"""Ground truth for `grad_norm_clip`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    total = torch.sqrt(sum((g.double() ** 2).sum() for grads in inputs for g in grads))
    coef = min(1.0, 1.0 / (float(total) + 1e-6))  # max_norm = 1.0
    return [tuple((g.double() * coef).to(g.dtype) for g in grads) + (total.float(),) for grads in inputs]
