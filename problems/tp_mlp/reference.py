import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    y = F.gelu(x @ w1, approximate="tanh") @ w2
    dist.all_reduce(y, op=dist.ReduceOp.SUM)
    return y
