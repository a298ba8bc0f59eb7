import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors


def _broadcast_from_0(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    flat = _flatten_dense_tensors(tensors)  # a fresh buffer: the inputs stay untouched
    dist.broadcast(flat, src=0)
    return list(_unflatten_dense_tensors(flat, tensors))


def solution(
    X_local, y_local, W1, b1, W2, b2,
    exp_avg_W1, exp_avg_b1, exp_avg_W2, exp_avg_b2,
    exp_avg_sq_W1, exp_avg_sq_b1, exp_avg_sq_W2, exp_avg_sq_b2,
    lr: float, beta1: float, beta2: float, eps: float, step: int,
):
    world = dist.get_world_size()
    params = [p.detach().requires_grad_(True) for p in _broadcast_from_0([W1, b1, W2, b2])]
    m = _broadcast_from_0([exp_avg_W1, exp_avg_b1, exp_avg_W2, exp_avg_b2])
    v = _broadcast_from_0([exp_avg_sq_W1, exp_avg_sq_b1, exp_avg_sq_W2, exp_avg_sq_b2])

    out = F.linear(F.relu(F.linear(X_local, params[0], params[1])), params[2], params[3])
    F.mse_loss(out, y_local).backward()

    grads = [p.grad for p in params]
    flat = _flatten_dense_tensors(grads)
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat.div_(world)
    grads = _unflatten_dense_tensors(flat, grads)

    bc1 = 1.0 - math.pow(beta1, step)
    bc2 = 1.0 - math.pow(beta2, step)
    new_p, new_m, new_v = [], [], []
    with torch.no_grad():
        for p, g, mi, vi in zip(params, grads, m, v):
            mi = mi * beta1 + g * (1.0 - beta1)
            vi = vi * beta2 + g * g * (1.0 - beta2)
            new_p.append(p - lr * (mi / bc1) / ((vi / bc2).sqrt() + eps))
            new_m.append(mi)
            new_v.append(vi)
    return tuple(new_p + new_m + new_v)
