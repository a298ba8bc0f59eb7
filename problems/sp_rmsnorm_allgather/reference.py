import torch
import torch.distributed as dist


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.float()).to(x.dtype)
    world = dist.get_world_size()
    out = torch.empty((world * y.shape[0], y.shape[1]), dtype=y.dtype, device=y.device)
    dist.all_gather_into_tensor(out, y)
    return out
