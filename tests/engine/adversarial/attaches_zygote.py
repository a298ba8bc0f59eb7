# HACK: attaches to its parent, the sandbox's zygote, which runs with no seccomp filter, no
# pinned core and the ranks' own user: a thread injected there (ptrace, or a write to
# /proc/<pid>/mem) could open network sockets or spin on the reference's core. A harness
# that filters only the ranks lets it (an adversarial review attached from a bwrap+uid rank
# on a host without Yama).
# EXPECTED: runtime_error naming both refusals: ptrace refused by the rank's filter, and the
# zygote's memory closed to it (it is not dumpable).
import ctypes
import errno
import os

PTRACE_ATTACH = 16


def solution(x):
    refused = []
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getppid()
    if libc.ptrace(PTRACE_ATTACH, parent, None, None) != 0:
        refused.append(f"ptrace: {errno.errorcode.get(ctypes.get_errno(), '?')}")
    try:
        with open(f"/proc/{parent}/mem", "rb") as f:
            f.read(1)
    except OSError as e:
        refused.append(f"mem: {errno.errorcode.get(e.errno, e.errno)}")
    raise RuntimeError("refused: " + "; ".join(refused))
