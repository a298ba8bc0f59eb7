import torch
import torch.distributed as dist


@torch.no_grad()
def solution(x: torch.Tensor, coefficients: list, steps: int, partition_dim: int) -> torch.Tensor:
    # Work on X with the sharded dimension as columns: the Gram matrix X X^T is then a sum of
    # per-rank partial products and every rank can keep it whole.
    work = (x.t() if partition_dim == 0 else x).float()
    norm_sq = (work * work).sum()
    dist.all_reduce(norm_sq)
    work = work / norm_sq.sqrt().clamp_min(1e-7)
    for step in range(steps):
        a, b, c = coefficients[step % len(coefficients)]
        gram = work @ work.t()
        dist.all_reduce(gram)
        poly = torch.addmm(gram, gram, gram, beta=b, alpha=c)  # b*G + c*G@G
        work = torch.addmm(work, poly, work, beta=a, alpha=1.0)  # a*X + poly@X
    out = work.to(x.dtype)
    return (out.t() if partition_dim == 0 else out).contiguous()
