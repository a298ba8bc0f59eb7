import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(partial: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
             bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    reduced = torch.empty_like(residual)
    dist.reduce_scatter_tensor(reduced, partial.contiguous(), op=dist.ReduceOp.SUM)
    hidden = reduced + residual
    y = F.layer_norm(hidden.float(), (hidden.shape[-1],), weight.float(), bias.float(), eps=1e-5)
    return y.to(partial.dtype), hidden
