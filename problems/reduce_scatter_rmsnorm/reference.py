import torch
import torch.distributed as dist


@torch.no_grad()
def solution(rs_input_1d: torch.Tensor, gamma: torch.Tensor, eps: float) -> torch.Tensor:
    world = dist.get_world_size()
    hidden = gamma.numel()
    chunk = torch.empty(rs_input_1d.numel() // world, dtype=rs_input_1d.dtype, device=rs_input_1d.device)
    dist.reduce_scatter_tensor(chunk, rs_input_1d.contiguous(), op=dist.ReduceOp.SUM)
    chunk.div_(world)
    x = chunk.view(-1, hidden).float()
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma.float()
    return y.to(rs_input_1d.dtype)
