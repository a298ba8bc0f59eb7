import torch
import torch.distributed as dist

LOCAL_EXPERTS = 8  # experts per rank


def solution(x: torch.Tensor, topk_idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    world = dist.get_world_size()
    t, k = topk_idx.shape
    flat_e = topk_idx.reshape(-1)
    token = torch.arange(t, device=x.device).repeat_interleave(k)
    # sort (token, expert) pairs by expert then token: grouped by destination rank
    order = torch.argsort(flat_e * t + token, stable=True)
    send_x = x[token[order]]
    send_counts = torch.bincount(flat_e, minlength=world * LOCAL_EXPERTS).reshape(world, LOCAL_EXPERTS)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)  # recv_counts[src, local expert]
    in_splits = send_counts.sum(1).tolist()
    out_splits = recv_counts.sum(1).tolist()
    recv_x = x.new_empty((sum(out_splits), x.shape[1]))
    dist.all_to_all_single(recv_x, send_x, out_splits, in_splits)
    # rows arrive ordered (source, expert, token); reorder to (expert, source, token)
    local_e = torch.arange(LOCAL_EXPERTS, device=x.device).repeat(world)
    row_expert = torch.repeat_interleave(local_e, recv_counts.reshape(-1))
    perm = torch.argsort(row_expert, stable=True)
    return recv_x[perm], recv_counts.sum(0)
