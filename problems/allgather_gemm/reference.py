import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    full = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(full, x.contiguous())
    return full @ w
