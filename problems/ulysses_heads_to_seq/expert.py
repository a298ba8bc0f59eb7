"""Expert candidate for `ulysses_heads_to_seq`: zero-pad the sequence to a multiple of the
world size, scatter the sequence, gather the heads.

Symmetric memory, no NCCL: symm_compose.all_to_all_dims. Each rank writes its tensor once
into its symmetric slot, one barrier, then copies chunk r of every rank's slot (its own
locally, the peers' over NVLink through peer views) straight into its place in the output:
the reference's per-chunk send copies, receive buffers and concatenation pass disappear.
The zero padding is written in the slot itself (no padded copy of x).
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(x, seq_dim, head_dim):
    world = dist.get_world_size()
    n = x.shape[seq_dim]
    return all_to_all_dims("ulysses_heads_to_seq", x, seq_dim, head_dim, pad_to=-(-n // world) * world)
