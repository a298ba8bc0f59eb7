# HACK: spins beside the reference's half (as spins_beside_reference.py), inside system calls
# that SIGSTOP cannot interrupt: its child maps and touches half a GiB at a time
# (mmap(MAP_POPULATE), then munmap), and a process stops only when the call returns (an
# adversarial review measured 119-279 ms from SIGSTOP to the stopped state, 10-22 ticks of
# CPU meanwhile). A harness that stops the candidate's processes between halves and takes the
# stop as done when it sends the signal (this one for a day) leaves that child on the cores
# through every reference half.
# EXPECTED: implausible: the judge counts the CPU time the stopped processes used, and no
# honest stopped process uses any.
import ctypes
import mmap
import os
import time

import torch
import torch.distributed as dist

_flag = mmap.mmap(-1, 1)  # shared with the child: 1 while a call runs
MAP_POPULATE = 0x8000
CHUNK = 512 << 20


def _spin() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    while True:
        if _flag[0] == 1:
            time.sleep(0.0002)
            continue
        p = libc.mmap(None, CHUNK, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_POPULATE,
                      -1, 0)
        if p not in (None, ctypes.c_void_p(-1).value):
            libc.munmap(p, CHUNK)


if os.fork() == 0:
    try:
        _spin()
    finally:
        os._exit(0)


def solution(x: torch.Tensor) -> torch.Tensor:
    _flag[0] = 1
    try:
        store = dist.distributed_c10d._get_default_store()
        rank, world = dist.get_rank(), dist.get_world_size()
        call = store.add(f"calls/{rank}", 1)
        store.set(f"x/{call}/{rank}", x.contiguous().cpu().numpy().tobytes())
        out = x.clone()
        for r in range(world):
            if r != rank:
                peer = torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype)
                out += peer.view_as(x)
        return out
    finally:
        _flag[0] = 0
