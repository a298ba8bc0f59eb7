# GPU ONLY (problem allreduce). Not a hack: the plain symmetric-memory peer-read sum (two
# symmetric barriers per call). Used after the faults above to show the node still
# evaluates the next candidate correctly.
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
    hdl.barrier(channel=0)
    return out
