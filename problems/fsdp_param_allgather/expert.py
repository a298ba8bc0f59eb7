"""Expert candidate for `fsdp_param_allgather`: FSDP2 copy-in, all-gather, copy-out of
several dim-0 sharded parameters.

Symmetric memory + the shared NVRTC copy kernel, no NCCL. Copy-in is one torch.cat written
straight into this rank's symmetric slot; after one barrier, one table-driven pull_copy
launch (per 32 table rows) reads every (parameter, rank) shard, the own ones locally, the
peers' over NVLink, straight into its rank-major rows of the gathered parameter: the
reference's separate copy-out pass disappears. The returned parameters are contiguous views
of one output buffer (parameter p occupies [W * off_p, W * (off_p + n_p)) of it).
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(*shards):
    dtype, dev = shards[0].dtype, shards[0].device
    es = shards[0].element_size()
    sizes = [s.numel() for s in shards]
    total = sum(sizes)
    sl = Slot("fsdp_param_allgather", total * es, dev)
    W = sl.world
    torch.cat([s.reshape(-1) for s in shards], out=sl.local(dtype, (total,)))
    flat = torch.empty(W * total, dtype=dtype, device=dev)
    sl.barrier()
    tasks, fulls, off = [], [], 0
    for s, n in zip(shards, sizes):
        for j in range(W):
            tasks.append((n * es, j, off * es, (W * off + j * n) * es))
        fulls.append(flat[W * off:W * (off + n)].view((W * s.shape[0],) + tuple(s.shape[1:])))
        off += n
    pull_blocks(sl, flat, tasks)
    return tuple(fulls)
