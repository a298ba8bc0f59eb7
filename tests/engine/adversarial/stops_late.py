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

MAP_POPULATE = 0x8000
CHUNK = 512 << 20
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def _busy() -> None:
    p = _libc.mmap(None, CHUNK, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0)
    if p not in (None, ctypes.c_void_p(-1).value):
        _libc.munmap(p, CHUNK)


# pkb:include ../fixtures/candidates/store_exchange.py
# pkb:include ../fixtures/candidates/busy_between_calls.py
