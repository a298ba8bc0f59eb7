import torch
import torch.distributed as dist

E4M3_MAX = 448.0


@torch.no_grad()
def solution(flat_param_shard: torch.Tensor, amax_history: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    world = dist.get_world_size()
    cur = flat_param_shard.abs().max().float()
    history = torch.roll(amax_history, -1)
    history[-1] = cur
    scale = history.max() / E4M3_MAX
    q = (flat_param_shard.float() / scale).to(torch.float8_e4m3fn)
    recon = (q.float() * scale).to(flat_param_shard.dtype)
    full = flat_param_shard.new_empty(flat_param_shard.numel() * world)
    dist.all_gather_into_tensor(full, recon)
    return full, history
