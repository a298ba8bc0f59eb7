import torch
import torch.distributed as dist


def solution(feats: torch.Tensor, edge_src: torch.Tensor, edge_dst: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    full = feats.new_empty((world * feats.shape[0], feats.shape[1]))
    dist.all_gather_into_tensor(full, feats.contiguous())
    out = torch.zeros_like(feats)
    out.index_add_(0, edge_dst, full[edge_src])
    return out
