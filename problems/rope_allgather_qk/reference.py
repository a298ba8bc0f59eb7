import torch
import torch.distributed as dist


def _rotate_half(t: torch.Tensor) -> torch.Tensor:
    half = t.shape[-1] // 2
    return torch.cat((-t[..., half:], t[..., :half]), dim=-1)


def solution(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    world = dist.get_world_size()
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)  # broadcast over heads
    out = []
    for t in (q, k):
        rot = (t * cos + _rotate_half(t) * sin).contiguous()
        blocks = [torch.empty_like(rot) for _ in range(world)]
        dist.all_gather(blocks, rot)
        out.append(torch.cat(blocks, dim=1))
    return out[0], out[1]
