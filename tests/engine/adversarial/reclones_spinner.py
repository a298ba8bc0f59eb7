# HACK: answers honestly, and spins whenever its own call is not running (on cpu: while the
# reference's half is timed, taking cores from it) in a process no walk of the process tree
# can hold or charge. A helper that ignores SIGCHLD starts a spinner that, every 0.3 ms,
# clones itself with CLONE_PARENT (the copy is the helper's child, not its own) and exits:
# the kernel reaps each generation at once, so its CPU time lands in no process's cutime, and
# a pid found by one walk is gone before it is signalled. A judge that stops a rank's
# processes by SIGSTOP and counts the CPU of those it finds (judge/freezer.py without a
# group) saw 0.0 s of `stopped_cpu` while it spun through the whole timing phase.
# EXPECTED: correct, and no faster than store_exchange.py: every generation is born in the
# rank's group, which the judge freezes whole while the reference's half runs, and whose CPU
# count keeps what reaped processes used.
import mmap
import os
import subprocess
import sys
import tempfile

_FLAG = os.path.join(tempfile.gettempdir(), f"reclone_flag_{os.getpid()}")
with open(_FLAG, "wb") as _f:
    _f.write(b"\0")
_fd = os.open(_FLAG, os.O_RDWR)
_flag = mmap.mmap(_fd, 1)  # 1 while a call of this rank runs

_HELPER = r"""
import ctypes, mmap, os, signal, sys, time
flag = mmap.mmap(os.open(sys.argv[1], os.O_RDWR), 1)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each generation reaped by the kernel: its CPU time is lost
if os.fork():
    print("started", flush=True)
    os.close(1)
    signal.pause()
    os._exit(0)
libc = ctypes.CDLL(None, use_errno=True)
SYS_CLONE = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
CLONE_PARENT = 0x00008000
end = time.monotonic() + 60
while time.monotonic() < end:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.0003:
        if flag[0] == 1:
            time.sleep(0.0002)  # out of its own call's way
    pid = libc.syscall(SYS_CLONE, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
    if pid > 0:
        os._exit(0)  # the copy goes on; this generation is reaped at once
os._exit(0)
"""

_spinner = subprocess.Popen([sys.executable, "-c", _HELPER, _FLAG], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
_spinner.stdout.readline()

# pkb:include ../fixtures/candidates/store_exchange.py

_honest = solution


def solution(*args):
    _flag[0] = 1
    try:
        return _honest(*args)
    finally:
        _flag[0] = 0
