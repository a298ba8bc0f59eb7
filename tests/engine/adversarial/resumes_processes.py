# HACK: resumes what the judge stopped. On cpu a judge stops the candidate's rank, its
# children and its orphans while the reference's half runs (engine/judge/freezer.py); a
# process the judge has not stopped (another rank's, or one forked a moment before) sends
# SIGCONT to the others and their spinning goes on. A harness that stops processes but lets
# the candidate send SIGCONT is fooled by it.
# EXPECTED: runtime_error naming each refusal: SIGCONT refused by the filter (EACCES) through
# kill, tgkill and pidfd_send_signal alike.
import ctypes
import errno
import os
import signal
import threading

SYS_TGKILL, SYS_PIDFD_OPEN, SYS_PIDFD_SEND_SIGNAL = 234, 434, 424  # x86_64


def solution(x):
    libc = ctypes.CDLL(None, use_errno=True)
    said = []
    try:
        os.kill(os.getpid(), signal.SIGCONT)
        said.append("kill was allowed")
    except OSError as e:
        said.append(f"kill: {errno.errorcode.get(e.errno, e.errno)}")
    rc = libc.syscall(SYS_TGKILL, os.getpid(), threading.get_native_id(), signal.SIGCONT)
    said.append(f"tgkill: {errno.errorcode.get(ctypes.get_errno(), '?')}" if rc else "tgkill was allowed")
    fd = libc.syscall(SYS_PIDFD_OPEN, os.getpid(), 0)
    if fd >= 0:
        rc = libc.syscall(SYS_PIDFD_SEND_SIGNAL, fd, signal.SIGCONT, None, 0)
        said.append(f"pidfd_send_signal: {errno.errorcode.get(ctypes.get_errno(), '?')}" if rc
                    else "pidfd_send_signal was allowed")
        os.close(fd)
    raise RuntimeError("; ".join(said))
