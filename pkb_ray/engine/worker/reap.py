"""Fork one process per rank, reap them, and say how each ended: one line per rank.

Used by the candidate's zygote (worker/zygote.py) and by the agent's rank runner
(engine/worker/agent_rank.py). The parent writes each `RankEnd.line()` to its stderr, which the
sandbox keeps as zygote.log; the node (waiting for a gone rank's line), the verdict
(naming the signal) and the agent (each rank's exit code) read it back with `ends_in`.
Standard library only: it is imported inside the sandbox, before the fork.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

_LINE = re.compile(r"^rank (\d+) (?:exited with code (-?\d+)|killed by signal (\w+))$")


@dataclass(frozen=True)
class RankEnd:
    """How one rank's process ended, as its parent saw it."""

    rank: int
    exit_code: int | None
    """The process's exit status; None when a signal ended it."""
    signal_name: str | None = None
    """SIGSEGV, SIGKILL, ... (the number for a signal Python does not name)."""

    def line(self) -> str:
        if self.signal_name is not None:
            return f"rank {self.rank} killed by signal {self.signal_name}"
        return f"rank {self.rank} exited with code {self.exit_code}"

    @classmethod
    def parse(cls, line: str) -> RankEnd | None:
        """The record a `line()` wrote, or None for any other line."""
        m = _LINE.match(line.strip())
        if m is None:
            return None
        if m.group(3) is not None:
            return cls(int(m.group(1)), None, m.group(3))
        return cls(int(m.group(1)), int(m.group(2)))

    @classmethod
    def from_status(cls, rank: int, status: int) -> RankEnd:
        """From os.wait()'s status."""
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            return cls(rank, None, name)
        return cls(rank, os.WEXITSTATUS(status))


def ends_in(text: str) -> dict[int, RankEnd]:
    """Each rank's end in a log (zygote.log); the first line for a rank counts."""
    ends: dict[int, RankEnd] = {}
    for line in text.splitlines():
        end = RankEnd.parse(line)
        if end is not None:
            ends.setdefault(end.rank, end)
    return ends


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
