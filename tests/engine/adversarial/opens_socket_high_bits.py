# HACK: opens the AF_INET and AF_INET6 sockets the filter refuses, by setting bits the kernel
# never reads: socket()'s family is a C int, so the kernel takes the low 32 bits of the
# register, while a seccomp filter compares all 64. A filter written with plain equality (this
# one before 2026-11-26, found by an adversarial review) lets socket(0x1_00000002, ...) open an
# AF_INET socket, and with it gloo, NCCL's bootstrap or any TCP; kill(pid, 0x1_00000012) sent
# SIGCONT past the same kind of rule.
# EXPECTED: runtime_error naming every refusal (EACCES): the filter compares the low 32 bits.
import ctypes
import errno
import os
import signal

SYS_SOCKET, SYS_KILL = 41, 62  # x86_64
HIGH = 1 << 32


def solution(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    said = []
    for name, family in (("AF_INET", 2), ("AF_INET6", 10)):
        fd = libc.syscall(ctypes.c_long(SYS_SOCKET), ctypes.c_long(HIGH | family), ctypes.c_long(1), ctypes.c_long(0))
        said.append(f"{name} socket opened" if fd >= 0 else f"{name}: {errno.errorcode.get(ctypes.get_errno(), '?')}")
        if fd >= 0:
            os.close(fd)
    rc = libc.syscall(ctypes.c_long(SYS_KILL), ctypes.c_long(os.getpid()), ctypes.c_long(HIGH | signal.SIGCONT))
    said.append("SIGCONT sent" if rc == 0 else f"SIGCONT: {errno.errorcode.get(ctypes.get_errno(), '?')}")
    raise RuntimeError("; ".join(said))
