"""What the host is doing while the judges take samples: CPU time that is not the
evaluation's own, CPU pressure and steal, read from /proc around the timing phase.

Read by the judges, which are not sandboxed: /proc/stat and /proc/pressure/cpu are the
host's. The evaluation's own CPU time (its judges, both workers' sandboxes and everything
in them) is taken out, so that what is left is another process's load. A candidate's
strays count as its own; one that escapes the count (a process the kernel reaps) only
ever costs it its own figure.
"""

from __future__ import annotations

import os
import time
from typing import Iterable

from pkb_ray.engine.protocol.timing import TimingConditions

PSI = "/proc/pressure/cpu"
STAT = "/proc/stat"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _psi_some_us() -> int | None:
    try:
        with open(PSI) as f:
            for line in f:
                if line.startswith("some "):
                    return int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _host_jiffies() -> tuple[int, int, int] | None:
    """(all CPU jiffies, busy jiffies, steal jiffies) of the host since boot."""
    try:
        with open(STAT) as f:
            line = f.readline()
        vals = [int(v) for v in line.split()[1:]]
    except (OSError, ValueError):
        return None
    total = sum(vals[:8])  # guest time is already counted in user
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return total, total - idle, vals[7] if len(vals) > 7 else 0


def _procs() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of it and of its reaped children)."""
    out: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields start after the last ")".
        rest = text[text.rfind(")") + 2:].split()
        try:
            ppid = int(rest[1])
            cpu = sum(int(v) for v in rest[11:15]) / _TICK  # utime stime cutime cstime
        except (IndexError, ValueError):
            continue
        out[int(name)] = (ppid, cpu)
    return out


def tree_cpu_s(roots: Iterable[int]) -> float:
    """CPU seconds of the processes under `roots` (themselves included)."""
    procs = _procs()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo, total = set(), [r for r in roots if r > 0], 0.0
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in procs:
            continue
        seen.add(pid)
        total += procs[pid][1]
        todo.extend(children.get(pid, ()))
    return total


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class ConditionsMeter:
    """Started at the phase's start on every judge; rank 0 reads the host, every judge its
    own CPU time (the judges' sum is the evaluation's, with the workers' trees)."""

    def __init__(self, roots: list[int], host: bool) -> None:
        self.roots, self.host = roots, host
        self.t0 = time.monotonic()
        self.own0 = own_cpu_s()
        self.psi0 = _psi_some_us() if host else None
        self.stat0 = _host_jiffies() if host else None
        self.tree0 = tree_cpu_s(roots) if host else 0.0

    def own_s(self) -> float:
        """This judge's CPU seconds since the start."""
        return own_cpu_s() - self.own0

    def read(self, judges_cpu_s: float) -> TimingConditions:
        """Rank 0: the conditions, given every judge's own CPU seconds over the phase."""
        wall_s = time.monotonic() - self.t0
        psi1, stat1 = _psi_some_us(), _host_jiffies()
        cpus = os.cpu_count() or 1  # the host's, not this judge's affinity (pinned on cuda)
        pressure = steal = foreign = None
        if self.psi0 is not None and psi1 is not None and wall_s > 0:
            pressure = min(1.0, max(0.0, (psi1 - self.psi0) / (wall_s * 1e6)))
        if self.stat0 is not None and stat1 is not None and stat1[0] > self.stat0[0] and wall_s > 0:
            steal = max(0.0, (stat1[2] - self.stat0[2]) / (stat1[0] - self.stat0[0]))
            busy_s = (stat1[1] - self.stat0[1]) / _TICK
            ours = (tree_cpu_s(self.roots) - self.tree0) + judges_cpu_s
            foreign = min(1.0, max(0.0, (busy_s - ours) / (wall_s * cpus)))
        return TimingConditions(cpu_pressure=pressure, steal=steal, foreign=foreign, cpus=cpus)


STEAL_MAX = 0.05
"""Share of the host's CPU time the hypervisor may take during the phase."""


def loaded(c: TimingConditions, device: str, max_foreign_cpu: float) -> str:
    """Why the host was too loaded for the phase's figure to mean anything, or "".

    cpu: the workers' ranks use every core the host has, and which rank another process's
    load lands beside holds for a whole evaluation, so a figure taken beside it is a draw of
    the scheduler (an honest exchange read 0.99x [0.73, 1.30] and 2.86x [2.28, 3.32] on one
    loaded 2-core machine): at most `max_foreign_cpu` of the host's CPUs may go to others.

    cuda: evidence only. The ranks wait on their GPUs on cores of their own, and the host's
    figures say nothing of those cores: over 210 references timed against themselves on a
    quiet 4 x H200 node (two GPU groups at once) CPU pressure reached 0.56 and steal 0.07 in
    evaluations whose samples were as steady as the rest."""
    if device == "cuda":
        return ""
    if c.foreign is not None and c.foreign > max_foreign_cpu:
        return (f"the host was loaded: other processes used {c.foreign:.0%} of its CPUs during the timing "
                f"phase (at most {max_foreign_cpu:.0%})")
    if c.steal is not None and c.steal > STEAL_MAX:
        return f"the hypervisor took {c.steal:.0%} of the host's CPU time during the timing phase"
    return ""
