"""Fork one process per rank, reap them, and say how each ended: one line per rank
(protocol/rank_ends.py's format, which the node reads back).

Used by the candidate's zygote (worker/zygote.py) and by the agent's rank runner
(worker/agent_rank.py). Standard library only: it is imported inside the sandbox, before
the fork.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TextIO

from pkb_ray.engine.protocol.rank_ends import RankEnd


def fork_ranks(world_size: int, workdir: str, run: Callable[[int], int]) -> dict[int, int]:
    """Fork ranks 0..world_size-1; returns {pid: rank}. Each child writes its stdout and
    stderr to <workdir>/rank<r>.log, works in <workdir>/rank<r>/, and ends with `run(r)`'s
    return value as its exit code (1, after the traceback in its log, when `run` raises)."""
    pids = {}
    for r in range(world_size):
        pid = os.fork()
        if pid == 0:
            _child(r, workdir, run)
        pids[pid] = r
    return pids


def _child(r: int, workdir: str, run: Callable[[int], int]) -> None:
    code = 1
    try:
        log = os.open(os.path.join(workdir, f"rank{r}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        rank_dir = os.path.join(workdir, f"rank{r}")
        os.makedirs(rank_dir, exist_ok=True)
        os.chdir(rank_dir)
        code = run(r)
    except BaseException:  # noqa: BLE001 - whatever ran: reported in the rank's log
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # no interpreter teardown: process-group destructors can block on dead peers


def reap(pids: dict[int, int], stream: TextIO | None = None) -> list[RankEnd]:
    """Wait for every forked rank; write each one's `line()` to `stream` (stderr) as it ends."""
    stream = stream or sys.stderr
    pids, ends = dict(pids), []
    while pids:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        r = pids.pop(pid, None)
        if r is None:
            continue
        end = RankEnd.from_status(r, status)
        print(end.line(), file=stream, flush=True)
        ends.append(end)
    return ends
