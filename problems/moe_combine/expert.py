"""Expert candidate for `moe_combine`: return expert outputs to their tokens' ranks and sum
them with the gate weights.

Symmetric memory + the shared NVRTC copy kernel, no NCCL. Each rank writes its send counts
and its expert outputs (as they are, ordered (local expert, source, token)) into its
symmetric slot, one barrier, one host read of every rank's counts (the reference syncs on
counts too), then one table-driven pull_copy launch (per 32 blocks) reads, from each expert
rank, the (expert, us) block of rows straight into the order our dispatch sent them
(destination expert, token): the reference's regrouping copy on the expert side disappears.
The weighted sum is the reference's (fp32 index_add_, one rounding at the end). The slot is
sized for the most rows a rank can receive (every rank's t * k), the same on every rank.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py
LOCAL_EXPERTS = 8  # experts per rank, as in the reference


def solution(expert_out, topk_idx, topk_weight):
    E = LOCAL_EXPERTS
    expert_out = expert_out.contiguous()
    dev = expert_out.device
    t, k = topk_idx.shape
    h = expert_out.shape[1]
    token, order, counts, cnt_bytes, row_bytes = moe_route(topk_idx, expert_out, E)
    W = dist.get_world_size()
    sl = Slot("moe_combine", cnt_bytes + W * t * k * row_bytes, dev)
    r = sl.rank
    sl.local(torch.int64, (W * E,)).copy_(counts)
    rows_here = expert_out.shape[0]
    if rows_here:
        sl.local(expert_out.dtype, (rows_here, h), cnt_bytes).copy_(expert_out)
    sl.barrier()
    cl = torch.stack([sl.peer(j, torch.int64, (W * E,)) for j in range(W)]).view(W, W, E).tolist()
    tasks, pos = [], 0
    for d in range(W):  # our send order: destination rank, its local expert, token
        for e in range(E):
            n = cl[r][d][e]
            if n:
                # rank d's rows: expert-major, then source, then token
                before = sum(cl[s][d][ee] for s in range(W) for ee in range(e)) + sum(cl[s][d][e] for s in range(r))
                tasks.append((n * row_bytes, d, cnt_bytes + before * row_bytes, pos * row_bytes))
                pos += n
    back = expert_out.new_empty((t * k, h))
    pull_blocks(sl, back, tasks)
    out = torch.zeros((t, h), dtype=torch.float32, device=dev)
    gate = topk_weight.reshape(-1)[order].float()
    out.index_add_(0, token[order], back.float() * gate[:, None])
    return out.to(expert_out.dtype)
