import torch
import torch.distributed as dist


def solution(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    rank = dist.get_rank()
    v = logits.shape[1]
    lf = logits.float()
    row_max = lf.max(dim=1).values
    dist.all_reduce(row_max, op=dist.ReduceOp.MAX)
    lf = lf - row_max[:, None]
    local = target - rank * v
    inside = (local >= 0) & (local < v)
    picked = lf.gather(1, local.clamp(0, v - 1)[:, None]).squeeze(1) * inside
    stats = torch.stack([picked, lf.exp().sum(dim=1)])
    dist.all_reduce(stats, op=dist.ReduceOp.SUM)
    return torch.log(stats[1]) - stats[0]
