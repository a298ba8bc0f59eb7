import torch
import torch.distributed as dist


def solution(x_hat: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dy32 = dy.float()
    grads = torch.stack([(dy32 * x_hat.float()).sum(dim=0), dy32.sum(dim=0)])
    dist.all_reduce(grads, op=dist.ReduceOp.SUM)
    return grads[0], grads[1]
