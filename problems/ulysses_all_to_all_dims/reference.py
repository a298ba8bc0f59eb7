import torch
import torch.distributed as dist


def solution(x: torch.Tensor, scatter_dim: int, gather_dim: int) -> torch.Tensor:
    world = dist.get_world_size()
    send = [c.contiguous() for c in torch.tensor_split(x, world, dim=scatter_dim)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send)
    return torch.cat(recv, dim=gather_dim).contiguous()
