# GPU ONLY (problem allreduce). HACK: the honest symmetric-memory all-reduce, computed once
# per input buffer and replayed for every later call on that buffer (keyed by data_ptr).
# Measured against the old engine on 2 x H200: reported correct at 4.75e-05 ms against NCCL's
# 0.2787 ms, roofline fraction 3655, flagged only module_level_state.
# EXPECTED: incorrect: the judge writes fresh contents into the buffers before every call.
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_STATE = {}
_BY_PTR = {}


def _sum(x):
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


def solution(x):
    if x.data_ptr() not in _BY_PTR:
        _BY_PTR[x.data_ptr()] = _sum(x)
    return _BY_PTR[x.data_ptr()]
