import torch
import torch.distributed as dist


def solution(y: torch.Tensor, s: torch.Tensor, block_size: int) -> torch.Tensor:
    world = y.shape[0]
    x = (y.float().reshape(world, -1, block_size) * s.reshape(world, -1, 1)).reshape(y.shape)
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    return out
