"""Kill a real process at a chosen moment, and read the JSONL files it leaves: shared by the
resume tests (a sweep driver, a tool episode), which all wait for a record, then SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable


def jsonl(paths: Path | Iterable[Path]) -> list[dict]:
    """Every record of the JSONL file(s) that exist, in order; a torn last line (what a kill
    leaves mid-write) is skipped."""
    out = []
    for path in [paths] if isinstance(paths, Path) else paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def kill_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout_s: float,
              settle_s: float = 0.0, group: bool = False) -> None:
    """SIGKILL `proc` (its whole process group when `group`: it was started with
    start_new_session=True) once `ready()` holds, `settle_s` later. Fails, with what the
    process printed, if it ends first or `timeout_s` passes."""
    deadline = time.time() + timeout_s
    while not ready():
        if proc.poll() is not None:
            out = proc.stdout or proc.stderr
            raise AssertionError(f"ended (exit {proc.returncode}) before the kill:\n"
                                 + (out.read() if out else ""))
        assert time.time() < deadline, "no progress before the kill"
        time.sleep(0.05)
    time.sleep(settle_s)
    if group:
        os.killpg(proc.pid, signal.SIGKILL)  # the process and everything it started, at once
    else:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
