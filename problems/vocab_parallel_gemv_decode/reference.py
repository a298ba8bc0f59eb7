import torch
import torch.distributed as dist


@torch.no_grad()
def solution(hidden_states: torch.Tensor, weight_shard: torch.Tensor, bias_shard: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    local = torch.matmul(hidden_states, weight_shard.t()) + bias_shard
    parts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(parts, local.contiguous())
    return torch.cat(parts, dim=1)
