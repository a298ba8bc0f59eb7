import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(u: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    top = torch.zeros_like(u[:1])
    bottom = torch.zeros_like(u[-1:])
    ops = []
    if rank > 0:
        ops += [dist.P2POp(dist.isend, u[:1].contiguous(), rank - 1), dist.P2POp(dist.irecv, top, rank - 1)]
    if rank < world - 1:
        ops += [dist.P2POp(dist.isend, u[-1:].contiguous(), rank + 1), dist.P2POp(dist.irecv, bottom, rank + 1)]
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    p = F.pad(torch.cat([top, u, bottom], dim=0), (1, 1))  # zero columns left and right
    return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
