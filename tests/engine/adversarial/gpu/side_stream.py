# GPU ONLY (problem allreduce). HACK: the honest peer-read sum on the current stream, then
# heavy extra work (20 bf16 4096^3 matmuls, ~3 ms on an H100) launched on a side stream and
# not waited for. CUDA events on the current stream see only the sum, so a harness timing
# with events alone reports a fast kernel while the GPU stays busy after "the end".
# EXPECTED: correct, flagged side_stream, and the time includes the side-stream work: the
# worker synchronizes the whole device before it answers, and the judge's window (the gate's
# opening -> the answer) is the figure.
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_STATE = {}
_SIDE = []


def _peer_sum(x):
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
    out = _peer_sum(x)
    if not _SIDE:
        a = torch.randn(4096, 4096, device=x.device, dtype=torch.bfloat16)
        _SIDE.extend([torch.cuda.Stream(), a])
    stream, a = _SIDE
    with torch.cuda.stream(stream):
        for _ in range(20):
            a @ a
    return out
