"""How a process takes its CPU core: pinned to one, or yielding (SCHED_IDLE, an autogroup of
nice 19). The judges and the workers' ranks call this on themselves; which core each gets,
and why, is the node's plan (engine/node/cpu_pins.py). Standard library only."""

from __future__ import annotations

import errno
import os
import time

AUTOGROUP_RETRY_S = 1.0
"""How long a refused autogroup nice write is retried. Without CAP_SYS_ADMIN the kernel takes
one such write per 100 ms across the whole host (a single static in sched/autogroup.c), not
per group: another session's process writing at the same moment refuses ours, and the ranks
of a fresh session then read nice 0 and do not yield. On a node, workers of two groups start
at once."""


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def pin_process(core: int, yields: bool = False) -> bool:
    """This process, every thread of it, on `core` (threads made later inherit it); if it
    `yields`, at SCHED_IDLE in an autogroup of nice 19. False, and not pinned, when the
    yielding cannot be had or the core may not be used (what yielding it got, it keeps:
    that can only slow it)."""
    if yields and not yield_process():
        return False
    before = os.sched_getaffinity(0)
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, {core})
        except OSError:
            for t in _threads():  # all or none: half a process on the core is neither
                try:
                    os.sched_setaffinity(t, before)
                except OSError:
                    pass
            return False
    return True


def yield_process() -> bool:
    """Every thread of this process at SCHED_IDLE, its autogroup at nice 19 (threads made
    later inherit the class); False where that cannot be had."""
    for tid in _threads():
        try:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            return False
    if os.sched_getscheduler(0) != os.SCHED_IDLE:
        return False
    deadline = time.monotonic() + AUTOGROUP_RETRY_S
    while True:
        try:
            with open("/proc/self/autogroup", "w") as f:  # no such file: no autogroup to escape by
                f.write("19")
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            # EAGAIN: a write within 100 ms of any other (AUTOGROUP_RETRY_S). The ranks of one
            # worker share a session, so what counts is the group's nice: a rank whose
            # sibling's write went through is done.
            if _autogroup_nice() == 19:
                return True
            if exc.errno != errno.EAGAIN or time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def _autogroup_nice() -> int | None:
    try:
        with open("/proc/self/autogroup") as f:  # "/autogroup-123 nice 19"
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None
