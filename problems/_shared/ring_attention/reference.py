# The shared part of the references of ring_attention_pp and ring_attention_tp: a grid of
# process groups and causal ring attention over one of them. Each including file defines its
# own `solution`.
import torch
import torch.distributed as dist

_GROUPS: dict = {}


def _grid_groups(inner: int):
    """(inner, outer) groups of this rank for rank = outer_index * inner + inner_index:
    the inner group is `inner` consecutive ranks, the outer group the ranks sharing
    inner_index. Made once per world (every rank creates every group, in the same order)."""
    world, rank = dist.get_world_size(), dist.get_rank()
    key = (id(dist.group.WORLD), world, inner)
    if key not in _GROUPS:
        inners = [dist.new_group(list(range(o * inner, (o + 1) * inner))) for o in range(world // inner)]
        outers = [dist.new_group(list(range(i, world, inner))) for i in range(inner)]
        _GROUPS[key] = (inners, outers)
    inners, outers = _GROUPS[key]
    return inners[rank // inner], outers[rank % inner]


def _ring_attention(q, k, v, scale, causal, group):
    """Attention of the local queries over the keys of every rank of `group`, K/V blocks
    passed around the group's ring; q, k, v [B, S, H, d]; block i of the sequence is on group
    rank i. Partial results are merged with their log-sum-exp in fp32."""
    n, me = group.size(), dist.get_rank(group)
    nxt = dist.get_global_rank(group, (me + 1) % n)
    prv = dist.get_global_rank(group, (me - 1) % n)
    qh = q.transpose(1, 2).float() * scale  # [B, H, S, d]
    out = torch.zeros_like(qh)
    lse = torch.full(qh.shape[:-1], float("-inf"), device=q.device)
    s = q.shape[1]
    kv = torch.stack([k, v]).contiguous()
    for step in range(n):
        src = (me - step) % n  # group rank whose K/V block we hold
        if step < n - 1:
            nxt_kv = torch.empty_like(kv)
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, kv, nxt), dist.P2POp(dist.irecv, nxt_kv, prv)])
        if not causal or src <= me:  # later blocks are entirely in the future
            scores = qh @ kv[0].transpose(1, 2).float().transpose(-1, -2)
            if causal and src == me:
                future = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
                scores = scores.masked_fill(future, float("-inf"))
            blk_lse = torch.logsumexp(scores, dim=-1)
            blk_out = torch.softmax(scores, dim=-1) @ kv[1].transpose(1, 2).float()
            new_lse = torch.logaddexp(lse, blk_lse)
            out = out * torch.exp(lse - new_lse).unsqueeze(-1) + blk_out * torch.exp(blk_lse - new_lse).unsqueeze(-1)
            lse = new_lse
        if step < n - 1:
            for req in reqs:
                req.wait()
            kv = nxt_kv
    return out.transpose(1, 2).to(q.dtype)
