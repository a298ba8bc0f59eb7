import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(weight: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    rank = dist.get_rank()
    v = weight.shape[0]
    local = ids - rank * v
    outside = (local < 0) | (local >= v)
    out = F.embedding(local.masked_fill(outside, 0), weight)
    out.masked_fill_(outside[:, None], 0.0)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out
