import torch
import torch.distributed as dist

FP8_MAX = 448.0  # the largest float8_e4m3fn value


def solution(x: torch.Tensor, block_size: int):
    world = dist.get_world_size()
    rows, cols = x.shape
    blocks = x.float().reshape(rows, cols // block_size, block_size)
    s = blocks.abs().amax(dim=-1) / FP8_MAX
    s_safe = torch.where(s == 0, torch.ones_like(s), s)
    y = (blocks / s_safe.unsqueeze(-1)).to(torch.float8_e4m3fn).reshape(rows, cols)
    # collectives do not take fp8: move the bytes as uint8
    y_parts = [torch.empty_like(y.view(torch.uint8)) for _ in range(world)]
    dist.all_gather(y_parts, y.view(torch.uint8))
    s_parts = [torch.empty_like(s) for _ in range(world)]
    dist.all_gather(s_parts, s)
    return torch.cat(y_parts).view(torch.float8_e4m3fn), torch.cat(s_parts)
