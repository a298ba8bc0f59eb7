# GPU ONLY (problem allreduce). HACK: none; a bug in the synchronization protocol. Both ranks
# pass the first symmetric barrier and read their peer, but rank 1 skips the second barrier,
# so rank 0 spins on the GPU forever waiting for rank 1's signal. A harness without a
# wall-clock limit per phase loses the node; one without phase reports cannot say where.
# EXPECTED: timeout (or cuda_fault if the barrier's device-side timeout traps), rank 0.
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_STATE = {}


def solution(x):
    key = (tuple(x.shape), x.dtype)
    if key not in _STATE:
        buf = symm_mem.empty(x.shape, dtype=x.dtype, device=x.device)
        _STATE[key] = (buf, symm_mem.rendezvous(buf, dist.group.WORLD))
    buf, hdl = _STATE[key]
    buf.copy_(x)
    hdl.barrier(channel=0)
    out = x.clone()
    for r in range(hdl.world_size):
        if r != hdl.rank:
            out += hdl.get_buffer(r, tuple(x.shape), x.dtype)
    if hdl.rank != 1:
        hdl.barrier(channel=0)
    return out
