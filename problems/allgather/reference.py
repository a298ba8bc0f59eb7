import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    out = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous())
    return out
