# GPU ONLY (problem allreduce). Not a hack: the honest peer-read sum, plus a host read of
# a device value (.item()) in every call, as code with data-dependent control flow does.
# Against the launch gate (engine/wire/gate.py) that read would wait forever: the GPU
# holds the call until every rank has queued all of it. EXPECTED: its problem's reference
# can be held, so it is timed held like every candidate of the problem; its gate expires in
# every sample, down to one call per sample (timing/expiries.py), and it is correct with no
# figure (flags waits_on_host, unmeasurable), in seconds, not minutes. A harness that fell back to timing it unheld would give it another
# instrument than the problem's other candidates (a figure a flip of mode can move 1.8x).
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
