import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x @ w
    dist.all_reduce(y, op=dist.ReduceOp.SUM)
    return y
