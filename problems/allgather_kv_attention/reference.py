import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    h, s, d = q.shape
    kv = torch.stack([k, v], dim=0).unsqueeze(0).contiguous()  # [1, 2, h, s, d]
    full = torch.empty((world, 2, h, s, d), dtype=q.dtype, device=q.device)
    dist.all_gather_into_tensor(full, kv)
    keys = full[:, 0].permute(1, 0, 2, 3).reshape(h, world * s, d)
    vals = full[:, 1].permute(1, 0, 2, 3).reshape(h, world * s, d)
    q_pos = rank * s + torch.arange(s, device=q.device)
    k_pos = torch.arange(world * s, device=q.device)
    mask = k_pos[None, :] <= q_pos[:, None]
    return F.scaled_dot_product_attention(q, keys, vals, attn_mask=mask)
