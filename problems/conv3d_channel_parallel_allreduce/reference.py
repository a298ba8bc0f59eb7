import torch
import torch.distributed as dist
import torch.nn.functional as F


@torch.no_grad()
def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int,
             padding: int, dilation: int) -> torch.Tensor:
    # each rank convolves its slice of the input channels: a partial sum of the full conv
    out = F.conv3d(x, weight, None, stride, padding, dilation)
    dist.all_reduce(out)
    return out + bias.view(1, -1, 1, 1, 1)
