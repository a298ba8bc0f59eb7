import torch
import torch.distributed as dist


def solution(a: torch.Tensor, b_local: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    c_local = a @ b_local
    blocks = [torch.empty_like(c_local) for _ in range(world)]
    dist.all_gather(blocks, c_local)
    return torch.cat(blocks, dim=1)
