import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    y = x @ w
    out = torch.empty((y.shape[0] // world, y.shape[1]), dtype=y.dtype, device=y.device)
    dist.reduce_scatter_tensor(out, y, op=dist.ReduceOp.SUM)
    return out
