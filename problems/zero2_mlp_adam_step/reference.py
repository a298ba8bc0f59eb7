# pkb:include ../_shared/zero_mlp_adam_step/reference.py


def _gradient_partition(flat_g, part, rank, world):
    """ZeRO-2: gradients are reduce-scattered; each rank keeps only its partition's sum."""
    g = torch.empty(part, dtype=flat_g.dtype, device=flat_g.device)
    dist.reduce_scatter_tensor(g, flat_g, op=dist.ReduceOp.SUM)
    g.div_(world)
    return g
