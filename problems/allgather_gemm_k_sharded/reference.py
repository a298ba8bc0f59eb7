import torch
import torch.distributed as dist


def solution(a_local: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    blocks = [torch.empty_like(a_local) for _ in range(world)]
    dist.all_gather(blocks, a_local.contiguous())
    return torch.cat(blocks, dim=1) @ b
