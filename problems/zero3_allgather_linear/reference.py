import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w_shard: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    w = torch.empty((world * w_shard.shape[0], w_shard.shape[1]), dtype=w_shard.dtype, device=w_shard.device)
    dist.all_gather_into_tensor(w, w_shard.contiguous())
    return x @ w.t()
