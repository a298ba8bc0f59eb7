import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors


def solution(
    X_local, y_local, flat_param_shard: torch.Tensor, param_shapes: list[list[int]],
    exp_avg_shard: torch.Tensor, exp_avg_sq_shard: torch.Tensor,
    lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, step: int,
):
    world = dist.get_world_size()
    part = flat_param_shard.numel()
    full = torch.empty(world * part, dtype=flat_param_shard.dtype, device=flat_param_shard.device)
    dist.all_gather_into_tensor(full, flat_param_shard.contiguous())
    templates = [full.new_empty(s) for s in param_shapes]
    params = [t.detach().requires_grad_(True) for t in _unflatten_dense_tensors(full, templates)]

    out = F.linear(F.relu(F.linear(X_local, params[0], params[1])), params[2], params[3])
    F.mse_loss(out, y_local).backward()

    flat_g = _flatten_dense_tensors([p.grad for p in params])
    g = torch.empty(part, dtype=flat_g.dtype, device=flat_g.device)
    dist.reduce_scatter_tensor(g, flat_g, op=dist.ReduceOp.SUM)
    g.div_(world)

    m = exp_avg_shard * beta1 + g * (1.0 - beta1)
    v = exp_avg_sq_shard * beta2 + g * g * (1.0 - beta2)
    bc1 = 1.0 - math.pow(beta1, step)
    bc2 = 1.0 - math.pow(beta2, step)
    theta = (flat_param_shard - lr * (m / bc1) / ((v / bc2).sqrt() + eps)
             - lr * weight_decay * flat_param_shard)
    return theta, m, v
