# GPU ONLY (problem allreduce). Not a hack: the honest peer-read sum, plus a host read of
# a device value (.item()) in every call, as code with data-dependent control flow does.
# Against the launch gate (engine/wire/gate.py) that read would wait forever: the GPU
# holds the call until every rank has queued all of it. EXPECTED: the gate times out once,
# the candidate is timed ungated (flag timed_ungated), correct, in seconds, not minutes.
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
    if not torch.isfinite(out.float().sum()).item():
        raise RuntimeError("non-finite sum")
    return out
