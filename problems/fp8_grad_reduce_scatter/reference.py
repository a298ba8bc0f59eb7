import torch
import torch.distributed as dist

E4M3_MAX = 448.0


@torch.no_grad()
def solution(flat_grads: torch.Tensor, amax_history: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    world = dist.get_world_size()
    cur = flat_grads.abs().max().float()
    history = torch.roll(amax_history, -1)
    history[-1] = cur
    scale = history.max() / E4M3_MAX
    q = (flat_grads.float() / scale).to(torch.float8_e4m3fn)
    recon = (q.float() * scale).to(flat_grads.dtype)
    shard = flat_grads.new_empty(flat_grads.numel() // world)
    dist.reduce_scatter_tensor(shard, recon)
    return shard.div_(world), history
