import torch
import torch.distributed as dist


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    # filled on the GPU (as torch's SyncBatchNorm does): torch.tensor([...], device=cuda)
    # copies from pageable host memory, and the host waits for the stream before that copy
    count = torch.full((1,), xf.numel() / xf.shape[1], device=x.device)
    stats = torch.cat([xf.sum(dim=(0, 2, 3)), (xf * xf).sum(dim=(0, 2, 3)), count])
    dist.all_reduce(stats, op=dist.ReduceOp.SUM)
    c = x.shape[1]
    total = stats[2 * c]
    mean = stats[:c] / total
    var = stats[c:2 * c] / total - mean * mean
    scale = weight.float() * torch.rsqrt(var + 1e-5)
    shift = bias.float() - mean * scale
    return (xf * scale[None, :, None, None] + shift[None, :, None, None]).to(x.dtype)
