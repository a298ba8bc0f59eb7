import torch
import torch.distributed as dist
import torch.nn.functional as F


def _quant_dequant(x: torch.Tensor, block_size: int) -> torch.Tensor:
    n = x.numel()
    flat = F.pad(x.reshape(-1), (0, (-n) % block_size)).view(-1, block_size)
    scale = flat.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-8) / 127.0
    q = (flat.float() / scale).round().clamp(-127, 127).to(torch.int8)
    return (q.float() * scale).reshape(-1)[:n]


@torch.no_grad()
def solution(flat_grad: torch.Tensor, block_size: int) -> torch.Tensor:
    acc = _quant_dequant(flat_grad, block_size)
    dist.all_reduce(acc, op=dist.ReduceOp.SUM)
    acc.div_(dist.get_world_size())
    return acc.to(flat_grad.dtype).reshape(flat_grad.shape)
