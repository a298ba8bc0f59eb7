# GPU ONLY (problem allreduce). HACK: the honest symmetric-memory all-reduce, with a
# persisting-L2 access window over its symmetric buffer and the largest persisting set-aside
# the device allows, so data it touched in one call stays on chip for the next: against a
# harness whose "cold L2" is only an eviction by ordinary traffic, every call starts warm.
# EXPECTED: correct, and no faster than the same code without the window: before every
# timed sample the judge resets persisting lines and the set-aside, and scrubs L2.
import ctypes

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_cu = ctypes.CDLL("libcuda.so.1")
_STATE = {}


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int), ("pad", ctypes.c_byte * 32)]


def _persist(buf):
    _cu.cuCtxSetLimit(6, ctypes.c_size_t(64 << 20))  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
    w = _Window(ctypes.c_void_p(buf.data_ptr()), buf.numel() * buf.element_size(), 1.0, 2, 1)
    _cu.cuStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1, ctypes.byref(w))


def solution(x):
    key = (tuple(x.shape), x.dtype)
    if key not in _STATE:
        buf = symm_mem.empty(x.shape, dtype=x.dtype, device=x.device)
        _STATE[key] = (buf, symm_mem.rendezvous(buf, dist.group.WORLD))
    buf, hdl = _STATE[key]
    _persist(buf)
    buf.copy_(x)
    hdl.barrier(channel=0)
    out = x.clone()
    for r in range(hdl.world_size):
        if r != hdl.rank:
            out += hdl.get_buffer(r, tuple(x.shape), x.dtype)
    hdl.barrier(channel=0)
    return out
