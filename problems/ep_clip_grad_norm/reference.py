import torch
import torch.distributed as dist

_GROUPS: dict = {}


def _ep_groups(world: int, rank: int, ep_size: int):
    """(ep_group, ep_fsdp_group) of this rank on the grid rank = fsdp_index * ep_size + ep_index;
    (None, WORLD) when ep_size is 1. Created once: new_group is a collective every rank
    makes in the same order."""
    if ep_size <= 1:
        return None, dist.group.WORLD
    key = (world, ep_size)
    if key not in _GROUPS:
        mine = [None, None]
        for blk in range(world // ep_size):
            ranks = list(range(blk * ep_size, (blk + 1) * ep_size))
            grp = dist.new_group(ranks)
            if rank in ranks:
                mine[0] = grp
        for idx in range(ep_size):
            ranks = list(range(idx, world, ep_size))
            grp = dist.new_group(ranks)
            if rank in ranks:
                mine[1] = grp
        _GROUPS[key] = tuple(mine)
    return _GROUPS[key]


def _pth_sum(grads: list, p: float, device) -> torch.Tensor:
    acc = torch.zeros((), dtype=torch.float32, device=device)
    for g in grads:
        acc = acc + torch.linalg.vector_norm(g.float(), ord=p) ** p
    return acc


def solution(non_ep_grads: list, ep_grads: list, max_norm: float, norm_type: float, ep_size: int):
    world, rank = dist.get_world_size(), dist.get_rank()
    p = float(norm_type)
    device = non_ep_grads[0].device
    ep_group, ep_fsdp_group = _ep_groups(world, rank, ep_size)
    if ep_size > 1:
        ep_grads = [(g.float() / ep_size).to(g.dtype) for g in ep_grads]
    non_ep = _pth_sum(non_ep_grads, p, device)
    dist.all_reduce(non_ep, op=dist.ReduceOp.SUM)
    ep = _pth_sum(ep_grads, p, device)
    dist.all_reduce(ep, op=dist.ReduceOp.SUM, group=ep_fsdp_group)
    if ep_group is not None:
        dist.all_reduce(ep, op=dist.ReduceOp.SUM, group=ep_group)
    total_norm = (non_ep + ep) ** (1.0 / p)
    # clamped on the GPU, as torch.nn.utils.clip_grad_norm_ does: `if total_norm > max_norm`
    # would make the host wait for the norm. A coefficient of 1 leaves every value unchanged.
    coef = torch.clamp(max_norm / total_norm, max=1.0)
    scale = lambda gs: [(g.float() * coef).to(g.dtype) for g in gs]  # noqa: E731
    return scale(non_ep_grads), scale(ep_grads), total_norm
