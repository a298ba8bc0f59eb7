import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    out = torch.empty((x.shape[0] // world, x.shape[1]), dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(out, x.contiguous(), op=dist.ReduceOp.SUM)
    return out
