"""The zygote's log format: one line per rank saying how it ended.

The zygote (worker/reap.py) writes each rank's `RankEnd.line()` to its stderr, which the
sandbox keeps as zygote.log; the node (waiting for a gone rank's line), the verdict (naming
the signal) and the agent (each rank's exit code) read it back with `ends_in`. A format both
sides share, so it lives here, not with either. Standard library only.
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass

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
