import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x_local: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    m = x_local.shape[0]
    m_local = m // world
    shards = [torch.empty_like(x_local) for _ in range(world)]
    dist.all_gather(shards, x_local.contiguous())
    x_rows = torch.cat(shards, dim=1)[rank * m_local:(rank + 1) * m_local]
    block = F.silu(x_rows @ w1) @ w2
    buf = block.new_zeros((m, block.shape[1]))
    buf[rank * m_local:(rank + 1) * m_local] = block
    out = block.new_empty((m_local, block.shape[1]))
    dist.reduce_scatter(out, list(buf.chunk(world)), op=dist.ReduceOp.SUM)
    return out
