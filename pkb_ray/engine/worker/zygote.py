"""The first process inside a candidate's sandbox: import torch once, fork one rank per GPU.

    python -m pkb_ray.engine.worker.zygote WORKER_START   (engine/protocol/start.py; environment: PKB_WORKDIR)

It is started fresh for every candidate (never forked from a judge, never holding a
secret), and may be started ahead of its candidate so the torch import (1-3 s) is off the
evaluation's clock. Each rank gets the channel to its own judge and a log file; the zygote
keeps no channel itself, reaps the ranks and writes how each ended to its own log (what
the node quotes when a rank dies without a word).
"""

from __future__ import annotations

import faulthandler
import functools
import os
import socket
import sys
from typing import Callable

from pkb_ray.engine.protocol.start import WorkerStart, payload
from pkb_ray.engine.wire import cores
from pkb_ray.engine.worker import file_limit, reap

SETUP_TIMEOUT_S = 600.0
"""The process group's store timeout for a rank set up ahead of its evaluation."""


def _rank_main(r: int, start: WorkerStart, workdir: str) -> int:
    fds = start.channel_fds
    for other in fds:
        if other != fds[r]:
            os.close(other)
    faulthandler.enable()  # a segfault leaves its Python stack in the rank's log
    from pkb_ray.engine.worker.rank import Rank

    worker = Rank(socket.socket(fileno=fds[r]), workdir)
    settle: Callable[[], object] = lambda: None
    if start.cores:
        # Set up where the zygote imported (cpu_pins.unpinned), then move to its own core: a
        # sandbox started ahead of its evaluation sets up while the evaluation before it may
        # be timing on that core. The move comes before the guarded rank's filter, which
        # refuses sched_setaffinity, and takes every thread set-up started.
        settle = functools.partial(_settle_on, start.cores[r], start.yields)
    elif start.yields:  # cpu: both workers, unpinned (cpu_pins.yields)
        cores.yield_process()
    worker.setup(r, start.world_size, start.device, start.guard, SETUP_TIMEOUT_S, settle)
    worker.serve()
    return 0


def _settle_on(core: int, yields: bool) -> None:
    """The rank on its core and, there, one intra-op thread: torch's pool holds a thread per
    physical core, all of them on this one core once pinned, and after each parallel CPU op
    they spin before they sleep. The reference's spinners (SCHED_OTHER) would take the core
    from the candidate's half, which yields, and never the other way round (as the judge's
    took its own core: judge/main.py). A candidate may set its own count: its core only."""
    import torch

    if cores.pin_process(core, yields=yields):
        torch.set_num_threads(1)


def _not_dumpable() -> None:
    import ctypes

    PR_SET_DUMPABLE = 4
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _adopts_orphans() -> None:
    """A process a rank made that outlives its parent becomes this one's child (not the
    sandbox's init's, nor the host's): the judges find it there and stop it with the rank
    (engine/judge/freezer.py); reap() ignores children that are not ranks."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def main() -> int:
    file_limit.apply()
    start = payload(WorkerStart)
    fds = start.channel_fds
    workdir = os.environ["PKB_WORKDIR"]
    if start.setup_cores:
        # The import (1-3 s of CPU) off the cores of the judges and workers: a spare sandbox
        # starts while an evaluation runs, and left to the scheduler its import could land on
        # that evaluation's workers' core, where the candidate's rank yields to anything.
        # The ranks inherit this until they move to their own core (_rank_main).
        try:
            os.sched_setaffinity(0, start.setup_cores)
        except OSError:
            pass
    import torch  # noqa: F401 - the point of a zygote: pay the import once, before forking
    import torch.distributed  # noqa: F401

    import pkb_ray.engine.worker.rank  # noqa: F401
    print("ready", flush=True)
    _adopts_orphans()
    pids = reap.fork_ranks(len(fds), workdir, lambda r: _rank_main(r, start, workdir))
    # This process has no filter, no pin and the ranks' user: a rank that attached to it
    # (ptrace, /proc/<pid>/mem) could run a thread here that opens sockets or takes the
    # reference's core (a rank of a bwrap+uid sandbox can attach on a host without Yama).
    # Not dumpable, no process of that user may.
    _not_dumpable()
    for fd in fds:  # only the ranks hold their channels: a judge sees a gone rank's EOF
        os.close(fd)
    reap.reap(pids)
    return 0


if __name__ == "__main__":
    sys.exit(main())
