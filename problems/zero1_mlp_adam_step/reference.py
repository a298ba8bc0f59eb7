# pkb:include ../_shared/zero_mlp_adam_step/reference.py


def _gradient_partition(flat_g, part, rank, world):
    """ZeRO-1: every rank all-reduces the full gradient, then steps only its partition."""
    dist.all_reduce(flat_g, op=dist.ReduceOp.SUM)
    flat_g.div_(world)
    return flat_g[rank * part:(rank + 1) * part]
