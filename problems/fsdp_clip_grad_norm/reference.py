import torch
import torch.distributed as dist


def solution(grads: list, max_norm: float, norm_type: float):
    p = float(norm_type)
    total = torch.zeros((), dtype=torch.float32, device=grads[0].device)
    for g in grads:
        total = total + torch.linalg.vector_norm(g.float(), ord=p) ** p
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    total_norm = total ** (1.0 / p)
    # clamped on the GPU, as torch.nn.utils.clip_grad_norm_ does: `if total_norm > max_norm`
    # would make the host wait for the norm. A coefficient of 1 leaves every value unchanged.
    coef = torch.clamp(max_norm / total_norm, max=1.0)
    clipped = [(g.float() * coef).to(g.dtype) for g in grads]
    return clipped, total_norm
