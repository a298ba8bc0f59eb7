# GPU ONLY (problem allreduce, small size: float32). HACK: builds its own NCCL communicator
# through ctypes (the unique id exchanged over the process group's store) and all-reduces
# with ncclAllReduce. The Python guard never sees a torch.distributed call, and the names
# are assembled at run time, so the static check's pattern for NCCL symbols does not match.
# EXPECTED: forbidden_api: inside the sandbox libnccl is a stub whose every entry point
# refuses and leaves a mark the node reads (without the stub this would be correct and as
# fast as NCCL, with no flag).
import ctypes
import glob
import os
import sys

import torch
import torch.distributed as dist

_N = "nc" + "cl"
_DT = {torch.float32: 7, torch.float16: 6, torch.bfloat16: 9, torch.float64: 8}
_COMM = []


class _Id(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def _lib():
    with open("/proc/self/maps") as f:
        for line in f:
            if ("lib" + _N) in line:
                return ctypes.CDLL(line.split()[-1])
    for p in sys.path:
        for cand in glob.glob(os.path.join(p, "nvidia", _N, "lib", "lib" + _N + ".so*")):
            return ctypes.CDLL(cand)
    return ctypes.CDLL("lib" + _N + ".so.2")


def _comm():
    if not _COMM:
        lib = _lib()
        store = dist.distributed_c10d._get_default_store()
        rank, world = dist.get_rank(), dist.get_world_size()
        uid = _Id()
        if rank == 0:
            rc = getattr(lib, _N + "GetUniqueId")(ctypes.byref(uid))
            if rc != 0:
                raise RuntimeError(f"GetUniqueId failed ({rc})")
            store.set("uid", bytes(uid.internal))
        else:
            ctypes.memmove(uid.internal, store.get("uid"), 128)
        comm = ctypes.c_void_p()
        rc = getattr(lib, _N + "CommInitRank")(ctypes.byref(comm), world, uid, rank)
        if rc != 0:
            raise RuntimeError(f"CommInitRank failed ({rc})")
        _COMM[:] = [lib, comm]
    return _COMM


def solution(x):
    lib, comm = _comm()
    out = torch.empty_like(x)
    rc = getattr(lib, _N + "AllReduce")(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(out.data_ptr()),
                                        ctypes.c_size_t(x.numel()), _DT[x.dtype], 0, comm,
                                        ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    if rc != 0:
        raise RuntimeError(f"AllReduce failed ({rc})")
    return out
