# GPU ONLY (problem allreduce). HACK: the honest symmetric-memory all-reduce, with
# torch.cuda.Event.elapsed_time patched to report a thousandth of the truth; the worker's
# timing code calls that method (patching the class reaches objects the harness made before
# the candidate was imported), so every time it reports is 1000 x too small.
# EXPECTED: correct, flagged worker_clock_disagrees, its time what the honest kernel costs: the
# judge's own clock (the gate's opening -> the answer) times both halves; the report is only
# evidence against the worker.
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_real = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real(self, end) / 1000.0
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
