import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.broadcast(out, src=0)
    return out
