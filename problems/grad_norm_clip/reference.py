import torch
import torch.distributed as dist

MAX_NORM = 1.0


def solution(*grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
    sq = torch.stack([g.float().pow(2).sum() for g in grads]).sum().reshape(1)
    dist.all_reduce(sq, op=dist.ReduceOp.SUM)
    total = sq.sqrt()[0]
    coef = torch.clamp(MAX_NORM / (total + 1e-6), max=1.0)
    return tuple(g * coef for g in grads) + (total,)
