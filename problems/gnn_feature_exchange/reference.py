import torch
import torch.distributed as dist


def solution(feats: torch.Tensor, req: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    n = feats.shape[0]
    owner = req // n
    order = torch.argsort(owner, stable=True)
    send_counts = torch.bincount(owner, minlength=world)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    send_splits, recv_splits = send_counts.tolist(), recv_counts.tolist()
    wanted = req.new_empty(sum(recv_splits))
    dist.all_to_all_single(wanted, req[order].contiguous(), recv_splits, send_splits)
    rows = feats[wanted - rank * n]
    back = feats.new_empty((req.numel(), feats.shape[1]))
    dist.all_to_all_single(back, rows, send_splits, recv_splits)
    out = torch.empty_like(back)
    out[order] = back
    return out
