import math

import torch
import torch.distributed as dist


@torch.no_grad()
def solution(
    grad_shard: torch.Tensor,
    master_shard: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    lr: float, beta1: float, beta2: float, eps: float, step: int,
):
    world = dist.get_world_size()
    m = exp_avg * beta1 + grad_shard * (1.0 - beta1)
    v = exp_avg_sq * beta2 + grad_shard * grad_shard * (1.0 - beta2)
    bc1 = 1.0 - math.pow(beta1, step)
    bc2 = 1.0 - math.pow(beta2, step)
    p = master_shard - lr * (m / bc1) / ((v / bc2).sqrt() + eps)
    gathered = torch.empty(world * p.numel(), dtype=p.dtype, device=p.device)
    dist.all_gather_into_tensor(gathered, p)
    return gathered, m, v
