"""Expert candidate for `ulysses_seq_to_heads`: gather the sequence, scatter the heads, drop
the trailing padding positions.

Symmetric memory, no NCCL: symm_compose.all_to_all_dims. Each rank writes its tensor once
into its symmetric slot, one barrier, then copies chunk r of every rank's slot (its own
locally, the peers' over NVLink through peer views) straight into its place in the output:
the reference's per-chunk send copies, receive buffers and concatenation pass disappear.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(x, seq_dim, head_dim, unpadded_dim_size):
    world = dist.get_world_size()
    out = all_to_all_dims("ulysses_seq_to_heads", x, head_dim, seq_dim)
    if unpadded_dim_size and unpadded_dim_size % world != 0:
        out = out.narrow(seq_dim, 0, unpadded_dim_size)
    return out
