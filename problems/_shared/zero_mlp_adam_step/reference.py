# The reference of the zero1/zero2_mlp_adam_step problems. The including file defines
# `_gradient_partition(flat_g, part, rank, world)`, the one thing its ZeRO stage changes.
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors


def solution(
    X_local, y_local, W1, b1, W2, b2,
    exp_avg_part: torch.Tensor, exp_avg_sq_part: torch.Tensor,
    lr: float, beta1: float, beta2: float, eps: float, step: int,
):
    world = dist.get_world_size()
    rank = dist.get_rank()
    templates = [W1, b1, W2, b2]
    flat_p = _flatten_dense_tensors(templates)  # a fresh buffer: the inputs stay untouched
    dist.broadcast(flat_p, src=0)
    params = [t.detach().requires_grad_(True) for t in _unflatten_dense_tensors(flat_p, templates)]

    out = F.linear(F.relu(F.linear(X_local, params[0], params[1])), params[2], params[3])
    F.mse_loss(out, y_local).backward()

    # the ZeRO stage's gradient exchange: this rank's partition of the mean gradient
    flat_g = _flatten_dense_tensors([p.grad for p in params])
    part = exp_avg_part.numel()
    g = _gradient_partition(flat_g, part, rank, world)
    m = exp_avg_part * beta1 + g * (1.0 - beta1)
    v = exp_avg_sq_part * beta2 + g * g * (1.0 - beta2)
    bc1 = 1.0 - math.pow(beta1, step)
    bc2 = 1.0 - math.pow(beta2, step)
    w = flat_p[rank * part:(rank + 1) * part] - lr * (m / bc1) / ((v / bc2).sqrt() + eps)

    gathered = torch.empty_like(flat_p)
    dist.all_gather_into_tensor(gathered, w.contiguous())
    return (*_unflatten_dense_tensors(gathered, templates), m, v)
