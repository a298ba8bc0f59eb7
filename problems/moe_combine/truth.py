"""Ground truth for `moe_combine`: every rank's output from all ranks' inputs, in one process."""

import torch

LOCAL_EXPERTS = 8


def dispatch_order(indices, rank):
    """(source rank, token, slot j) of each row expert rank `rank` holds, in dispatch order
    (local expert, then source rank, then token): three int64 tensors on the indices' device."""
    world = len(indices)
    tokens = max(idx.shape[0] for idx in indices)
    src, tok, slot, key = [], [], [], []
    for s, idx in enumerate(indices):
        t, j = torch.nonzero(idx // LOCAL_EXPERTS == rank, as_tuple=True)
        e = idx[t, j] - rank * LOCAL_EXPERTS
        src.append(torch.full_like(t, s))
        tok.append(t)
        slot.append(j)
        key.append((e * world + s) * tokens + t)
    order = torch.argsort(torch.cat(key))
    return torch.cat(src)[order], torch.cat(tok)[order], torch.cat(slot)[order]


def expected(inputs, world_size):
    """out[t] on rank r = sum_j weight[t, j] * (row of pair (t, idx[t, j])), in float64, rows
    added expert rank by expert rank in dispatch order. One index_add per expert rank: a
    Python loop over rows and tokens takes longer than the audit gives truth.py at bench size
    (2048 tokens x top-8 x 7168 hidden)."""
    indices = [i[1] for i in inputs]
    ys = [torch.zeros(idx.shape[0], x.shape[1], dtype=torch.float64, device=x.device)
          for x, idx, _ in inputs]
    for dst in range(world_size):
        rows = inputs[dst][0]
        src, tok, slot = dispatch_order(indices, dst)
        for r in range(world_size):
            mine = torch.nonzero(src == r).squeeze(1)
            part = rows[mine].double()
            part.mul_(inputs[r][2][tok[mine], slot[mine]].double().unsqueeze(1))
            ys[r].index_add_(0, tok[mine], part)
    return [y.to(x.dtype) for y, (x, _, _) in zip(ys, inputs)]
