import torch
import torch.distributed as dist


@torch.no_grad()
def solution(teacher_output: torch.Tensor, teacher_temp: float, n_masked: torch.Tensor,
             n_iterations: int) -> torch.Tensor:
    q = torch.exp(teacher_output.float() / teacher_temp).t()  # [P, n_r]
    num_prototypes = q.shape[0]
    total_patches = n_masked.to(torch.float32).clone()
    dist.all_reduce(total_patches)
    mass = q.sum()
    dist.all_reduce(mass)
    q = q / mass
    for _ in range(n_iterations):
        per_prototype = q.sum(dim=1, keepdim=True)
        dist.all_reduce(per_prototype)
        q = q / per_prototype / num_prototypes
        q = q / q.sum(dim=0, keepdim=True) / total_patches
    return (q * total_patches).t().contiguous()
