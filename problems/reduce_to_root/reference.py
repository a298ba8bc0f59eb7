import torch
import torch.distributed as dist


def solution(x: torch.Tensor, dst: int) -> torch.Tensor:
    out = x.clone()
    dist.reduce(out, dst=dst, op=dist.ReduceOp.SUM)
    if dist.get_rank() != dst:
        # the backends leave non-destination buffers unspecified: return this rank's data
        out = x.clone()
    return out
