import torch
import torch.distributed as dist


def solution(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    world = dist.get_world_size()
    x32 = x.float()
    sum_sq = x32.pow(2).sum(dim=-1, keepdim=True)
    dist.all_reduce(sum_sq, op=dist.ReduceOp.SUM)
    ms = sum_sq / (x.shape[-1] * world)
    return weight * (x32 * torch.rsqrt(ms + eps)).to(x.dtype)
