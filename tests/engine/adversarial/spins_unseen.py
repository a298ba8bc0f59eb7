# HACK: spins beside the reference's half (as spins_beside_reference.py) with processes
# that the judge can neither keep stopped nor charge. A small helper (a fresh interpreter,
# so forking it is cheap) and every spinner it forks each arm a POSIX timer whose signal is
# SIGCONT (timer_create: no filter looks at it), so a SIGSTOP holds them for a millisecond
# at most. The helper ignores SIGCHLD, so each spinner is reaped by the kernel the moment it
# exits: its CPU time is added to no process's cutime and shows in no /proc/<pid>/stat the
# judge reads. The helper forks a short-lived child every 6 ms; each waits (polling
# /proc/<rank>/stat) for the rank to be stopped ('T': while the reference's half runs),
# spins at most 8 ms, and exits: no live process ever holds a whole clock tick when the
# judge counts (/proc's utime is in 10 ms ticks, per process). Each spinner writes the CPU it
# used to the rank's log, for the record.
# A harness that stops the candidate's processes and counts the CPU time of the processes
# it can see while they are stopped (judge/freezer.py: > 100 ms over >= 3 stops is
# implausible) is fooled: the judge counts 0 ms while the spinners use hundreds.
# EXPECTED: correct (or implausible), its helper's timer_create refused (EACCES, in its log):
# the filter refuses timer_create on cpu.
import os
import signal
import sys

import torch

_HELPER = r'''
import ctypes, os, signal, sys, time
rank = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
class SigEvent(ctypes.Structure):
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_int * 12)]
class TS(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
class ITS(ctypes.Structure):
    _fields_ = [("interval", TS), ("value", TS)]
def timer(period_ns):
    ev = SigEvent(None, signal.SIGCONT, 0)  # SIGEV_SIGNAL
    tid = ctypes.c_void_p()
    if libc.timer_create(1, ctypes.byref(ev), ctypes.byref(tid)) != 0:
        raise OSError(ctypes.get_errno(), "timer_create")
    its = ITS(TS(0, period_ns), TS(0, period_ns))
    libc.timer_settime(tid, 0, ctypes.byref(its), None)
    return tid
def arm(tid, ns):
    its = ITS(TS(0, 0), TS(0, ns))
    libc.timer_settime(tid, 0, ctypes.byref(its), None)
signal.signal(signal.SIGCONT, lambda *a: None)  # handled, never ignored: every expiry is delivered
def stopped():
    try:
        with open(f"/proc/{rank}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        sys.exit(0)
# Three timers: a SIGSTOP flushes a SIGCONT still pending, and a periodic POSIX timer is
# re-armed only when its signal is taken; one of three is always on its way.
timers = [timer(p) for p in (700_000, 1_100_000, 1_700_000)]
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel: their CPU time is lost
def child():
    # Pre-forked: waits for the rank to stop, spins while it is stopped (8 ms at most, so
    # that no live spinner holds a clock tick when the judge counts), then exits; one that
    # never sees a stop exits after 18 ms. Its CPU time goes nowhere (SIGCHLD ignored above).
    timer(200_000)
    t_end = time.perf_counter() + 0.018
    while not stopped():
        if time.perf_counter() > t_end:
            os._exit(0)
        time.sleep(0.0002)
    end = time.perf_counter() + 0.008
    n = 0
    while time.perf_counter() < end:
        n += 1
        if n % 1000 == 0 and not stopped():
            break
    spent = time.process_time()
    os.write(2, f"spinner ran {spent * 1e3:.1f} ms of CPU\n".encode())
    os._exit(0)
while True:
    if os.fork() == 0:
        child()
    time.sleep(0.006)
'''

_started = []


def _start_helper():
    if _started:
        return
    _started.append(os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", _HELPER, str(os.getpid())],
                                   dict(os.environ)))


# pkb:include ../fixtures/candidates/store_exchange.py
_exchange = solution


def solution(x: torch.Tensor) -> torch.Tensor:
    _start_helper()
    return _exchange(x)
