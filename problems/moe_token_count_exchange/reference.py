import torch
import torch.distributed as dist


def solution(expert_mask: torch.Tensor, num_experts: int):
    world = dist.get_world_size()
    rank = dist.get_rank()
    local = num_experts // world
    counts = expert_mask.sum(dim=(1, 2))  # [E] pairs of this rank per expert
    input_splits = counts.reshape(world, local).sum(dim=1)
    all_counts = torch.empty(world * num_experts, dtype=counts.dtype, device=counts.device)
    dist.all_gather_into_tensor(all_counts, counts.contiguous())
    per_local = all_counts.reshape(world, num_experts)[:, rank * local:(rank + 1) * local]
    output_splits = per_local.sum(dim=1)
    return (input_splits.long(), output_splits.long(), per_local.long().contiguous(),
            per_local.sum(dim=0).long())
