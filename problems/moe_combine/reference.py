import torch
import torch.distributed as dist

LOCAL_EXPERTS = 8  # experts per rank


def solution(expert_out: torch.Tensor, topk_idx: torch.Tensor,
             topk_weight: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    dev = expert_out.device
    t, k = topk_idx.shape
    flat_e = topk_idx.reshape(-1)
    token = torch.arange(t, device=dev).repeat_interleave(k)
    order = torch.argsort(flat_e * t + token, stable=True)  # our pairs as the dispatch sent them
    send_counts = torch.bincount(flat_e, minlength=world * LOCAL_EXPERTS).reshape(world, LOCAL_EXPERTS)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)  # recv_counts[src, local expert]
    # expert_out rows are ordered (expert, source, token); regroup them by source to send back
    local_e = torch.arange(LOCAL_EXPERTS, device=dev).repeat(world)
    row_expert = torch.repeat_interleave(local_e, recv_counts.reshape(-1))
    perm = torch.argsort(row_expert, stable=True)
    by_source = torch.empty_like(expert_out)
    by_source[perm] = expert_out
    back = expert_out.new_empty((t * k, expert_out.shape[1]))
    dist.all_to_all_single(back, by_source, send_counts.sum(1).tolist(), recv_counts.sum(1).tolist())
    out = torch.zeros((t, expert_out.shape[1]), dtype=torch.float32, device=dev)
    gate = topk_weight.reshape(-1)[order].float()
    out.index_add_(0, token[order], back.float() * gate[:, None])
    return out.to(expert_out.dtype)
