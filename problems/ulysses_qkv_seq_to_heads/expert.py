"""Expert candidate for `ulysses_qkv_seq_to_heads`: fused QKV viewed as [.., 3, width / 3],
scatter the last dim (head groups of q, k and v), gather the sequence, drop the padding.

Symmetric memory, no NCCL: symm_compose.all_to_all_dims. Each rank writes its tensor once
into its symmetric slot, one barrier, then copies chunk r of every rank's slot (its own
locally, the peers' over NVLink through peer views) straight into its place in the output:
the reference's per-chunk send copies, receive buffers and concatenation pass disappear.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(qkv, seq_dim, unpadded_dim_size, restore_shape):
    world = dist.get_world_size()
    shape = list(qkv.shape)
    width = shape[-1]
    x = qkv.contiguous().view(shape[:-1] + [3, width // 3])
    x = all_to_all_dims("ulysses_qkv_seq_to_heads", x, x.dim() - 1, seq_dim)
    if restore_shape:
        shape[seq_dim] *= world
        shape[-1] = width // world
        x = x.view(shape)
    if unpadded_dim_size and unpadded_dim_size % world != 0:
        x = x.narrow(seq_dim, 0, unpadded_dim_size)
    return x
