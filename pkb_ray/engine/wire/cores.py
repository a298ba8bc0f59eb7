"""How a process takes its CPU core: pinned to one, or yielding (SCHED_IDLE, an autogroup of
nice 19). The judges and the workers' ranks call this on themselves; which core each gets,
and why, is the node's plan (engine/node/cpu_pins.py). Standard library only."""

from __future__ import annotations

import os


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
    try:
        with open("/proc/self/autogroup", "w") as f:  # no such file: no autogroup to escape by
            f.write("19")
    except FileNotFoundError:
        pass
    except OSError:
        # The kernel takes one such write per autogroup in 100 ms from a process without
        # CAP_SYS_ADMIN (EAGAIN), and the ranks of one worker share a session: every rank
        # but the first writes too soon. What counts is the group's nice.
        return _autogroup_nice() == 19
    return True


def _autogroup_nice() -> int | None:
    try:
        with open("/proc/self/autogroup") as f:  # "/autogroup-123 nice 19"
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None
