import torch
import torch.distributed as dist


def solution(x: torch.Tensor, dst: int):
    world, rank = dist.get_world_size(), dist.get_rank()
    parts = [torch.empty_like(x) for _ in range(world)] if rank == dst else None
    dist.gather(x.contiguous(), gather_list=parts, dst=dst)
    return torch.stack(parts) if rank == dst else None
