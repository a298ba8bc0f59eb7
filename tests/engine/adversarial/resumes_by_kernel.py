# HACK: resumes what the judge stopped without sending a signal itself, so the filter's rule
# on kill, tgkill and the like never sees it: the kernel sends SIGCONT on its behalf. A POSIX
# timer whose signal is SIGCONT (timer_create: the signal sits in a struct a filter cannot
# read), a child whose exit signal is SIGCONT (clone's low byte of flags: its parent resumes
# when it exits), a parent's death signal (prctl PR_SET_PDEATHSIG) and a descriptor whose I/O
# signal is SIGCONT (fcntl F_SETSIG). Any of them
# keeps a spinner going beside the reference's half (spins_unseen.py arms timers).
# A harness that refuses SIGCONT only where a process sends it is fooled.
# EXPECTED: runtime_error naming each refusal (EACCES) on cpu, where the judges stop ranks.
import ctypes
import errno
import fcntl
import os
import signal

SYS_CLONE, SYS_TIMER_CREATE, SYS_TIMER_DELETE = 56, 222, 226  # x86_64
F_SETSIG, SIGEV_SIGNAL, CLOCK_MONOTONIC, WALL = 10, 0, 1, 0x40000000


class SigEvent(ctypes.Structure):
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_int * 12)]


def solution(x):
    libc = ctypes.CDLL(None, use_errno=True)
    said = []
    ev, timer = SigEvent(None, signal.SIGCONT, SIGEV_SIGNAL), ctypes.c_int(0)
    if libc.syscall(SYS_TIMER_CREATE, CLOCK_MONOTONIC, ctypes.byref(ev), ctypes.byref(timer)) == 0:
        libc.syscall(SYS_TIMER_DELETE, timer)
        said.append("timer_create was allowed")
    else:
        said.append(f"timer_create: {errno.errorcode.get(ctypes.get_errno(), '?')}")
    pid = libc.syscall(SYS_CLONE, signal.SIGCONT, None, None, None, None)
    if pid == 0:
        os._exit(0)  # the child: nothing to do but exit, which sends SIGCONT to its parent
    if pid > 0:
        os.waitpid(pid, WALL)
        said.append("clone with exit signal SIGCONT was allowed")
    else:
        said.append(f"clone: {errno.errorcode.get(ctypes.get_errno(), '?')}")
    if libc.prctl(1, signal.SIGCONT, 0, 0, 0) == 0:  # PR_SET_PDEATHSIG
        said.append("prctl PR_SET_PDEATHSIG SIGCONT was allowed")
    else:
        said.append(f"prctl: {errno.errorcode.get(ctypes.get_errno(), '?')}")
    r, w = os.pipe()
    try:
        fcntl.fcntl(r, F_SETSIG, signal.SIGCONT)
        said.append("fcntl F_SETSIG was allowed")
    except OSError as e:
        said.append(f"fcntl: {errno.errorcode.get(e.errno, e.errno)}")
    raise RuntimeError("; ".join(said))
