import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    top = torch.zeros_like(x[:, :, :1])
    bottom = torch.zeros_like(x[:, :, -1:])
    ops = []
    if rank > 0:
        ops += [dist.P2POp(dist.isend, x[:, :, :1].contiguous(), rank - 1), dist.P2POp(dist.irecv, top, rank - 1)]
    if rank < world - 1:
        ops += [dist.P2POp(dist.isend, x[:, :, -1:].contiguous(), rank + 1), dist.P2POp(dist.irecv, bottom, rank + 1)]
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    padded = torch.cat([top, x, bottom], dim=2)
    return F.conv2d(padded, weight, padding=(0, 1))
