import torch
import torch.distributed as dist


def solution(act: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    recv = torch.empty_like(act)
    reqs = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, act.contiguous(), (rank + 1) % world),
        dist.P2POp(dist.irecv, recv, (rank - 1) % world),
    ])
    for req in reqs:
        req.wait()
    return recv
