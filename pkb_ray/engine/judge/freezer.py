"""Stop a worker's rank while the other worker's half is timed on cpu: its control group
frozen where the sandbox has one, else each of its processes sent SIGSTOP.

Why: on cpu both workers' ranks share every core at one scheduling class (engine/node/cpu_pins.py
says why they must), so a candidate thread that spins while the reference's half runs takes
cores from the reference at equal weight and makes the candidate look faster; one that spins
only then costs its own half nothing. On GPUs the candidate yields its core to the reference
worker instead (pinned, SCHED_IDLE). Here a judge stops its rank's candidate processes, and
every process the candidate made that outlived its parent, before each of the reference's
halves, and the reference's rank before each of the candidate's, so both halves start from
the same state. A rank cannot resume them: the filter refuses SIGCONT (worker/no_network.py).

What is stopped is found from the host, not from anything a worker says after its candidate
exists: the sandbox's first process (the node passes its pid), the rank's own pid as the rank
gave it before any candidate code was loaded (its Hello, translated through /proc's NSpid
where the sandbox has a pid namespace), and the zygote's children at that time (the ranks:
the zygote is a child subreaper, so an orphan of any rank is re-parented to it, and is
therefore a zygote child that is not a rank). Another rank's processes are its own judge's:
stopping them from here would stop a peer still finishing its half (its judge waits on it).

Where the sandbox has a group (engine/launch/bounds.py), the judge moves its rank into a group
of its own under it before any candidate code exists; every process the rank makes is born
there, whatever its parent or pid. Freezing that group stops all of them in one write, a
process the walk below would miss (one that re-clones itself with CLONE_PARENT every 0.3 ms)
included, and its CPU count (cpu.stat, cpuacct.usage) keeps what every process used, reaped or
not. Signals remain the way where no group can be had (no root, no writable hierarchy): one
SIGSTOP per process, 1.9-2.4 s per evaluation for 500 sleeping strays per rank on a 2-core
machine, against one write.
"""

from __future__ import annotations

import os
import signal

from pkb_ray.engine import cgroup


class FreezeUnavailable(RuntimeError):
    """The rank's processes cannot be found or signalled from this judge."""


def children(pid: int) -> list[int]:
    """Every child of a process (of each of its threads); [] once it is gone."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return out


CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
RAN_MS = 1e3 / CLOCK_TICKS_PER_S
"""A stop that saw more CPU than this (one clock tick) ran while stopped."""


def _ticks(pid: int, fields: tuple[int, ...]) -> int:
    """Sum of /proc/<pid>/stat fields, counted from the state (0) after the command name:
    utime 11, stime 12, cutime 13, cstime 14. 0 for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            after = f.read().rsplit(")", 1)[1].split()
        return sum(int(after[i]) for i in fields)
    except (OSError, IndexError, ValueError):
        return 0


def _status(pid: int, key: str) -> list[int]:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return [int(v) for v in line.split()[1:]]
    return []


class RankFreezer:
    """One worker's rank r (and the candidate's orphans), as judge r stops and resumes it."""

    def __init__(self, root_pid: int, rank_pid_inside: int, world_size: int) -> None:
        """root_pid: the sandbox's first process on the host; rank_pid_inside: the pid the
        rank reported before any candidate code was loaded (its own namespace's); called
        once every rank of the worker has started (all `world_size` of them are counted)."""
        self.rank_pid = self._find(root_pid, rank_pid_inside)
        zygote = _status(self.rank_pid, "PPid")[0]
        self.ranks = set(children(zygote))
        if len(self.ranks) != world_size:
            raise FreezeUnavailable(f"the zygote has {len(self.ranks)} children, not the {world_size} ranks")
        self._signal(self.rank_pid, 0)  # may this judge signal it at all (another user, no root)?
        chain, pid = {zygote}, zygote
        while pid != root_pid and pid > 1:  # the harness's processes above the ranks
            pid = _status(pid, "PPid")[0]
            chain.add(pid)
        self.root, self.chain, self.zygote = root_pid, chain, zygote
        self.stopped: set[int] = set()
        self.ticks_at_stop: int | None = None
        self.ran_ticks = 0
        """CPU time (clock ticks) its processes used while stopped, over every stop so far
        (signals)."""
        self.group = _rank_group(root_pid, self.rank_pid)
        """The rank's own group, frozen instead of signalling (None: signals)."""
        self.ns_at_stop: int | None = None
        self.ran_ns = 0
        """CPU time its group used while frozen, over every stop so far."""
        self.stops_that_ran = 0
        """How many stops saw more than a tick of it: an honest worker's first stop on a
        fresh node once counted 290 ms (four evaluations on a 2-core machine, cause not
        found), none after; a candidate that runs while stopped does so stop after stop."""

    @property
    def how(self) -> str:
        """How the rank is stopped: "cgroup v1", "cgroup v2" or "signals"."""
        return f"cgroup v{self.group.version('freezer')}" if self.group is not None else "signals"

    @staticmethod
    def _find(root_pid: int, inside: int) -> int:
        seen, todo = set(), [root_pid]
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                if _status(pid, "NSpid")[-1:] == [inside] and pid != root_pid:
                    return pid
            except OSError:
                continue
            todo.extend(children(pid))
        raise FreezeUnavailable(f"no process of pid {inside} (inside its sandbox) under pid {root_pid}")

    def processes(self) -> list[int]:
        """This rank's processes, and every stray (a process the candidate made whose parent
        is gone): none of the harness's above the ranks, none of another rank's."""
        out, todo = [], [(self.root, False)]
        while todo:
            pid, ours = todo.pop()
            for c in children(pid):
                if c in self.ranks and c != self.rank_pid:
                    continue
                mine = ours or c == self.rank_pid or c not in self.chain
                if mine:
                    out.append(c)
                todo.append((c, mine))
        return out

    def freeze(self) -> None:
        if self.group is not None:
            self.group.freeze()  # what runs until each task reaches the freezer is counted below
            if self.ns_at_stop is None:
                self.ns_at_stop = self.group.cpu_ns()
            return
        # A process forking while it is being stopped leaves a child the first walk missed;
        # once every process found is stopped nothing forks, so a few walks settle it.
        settled: list[int] | None = None
        for _ in range(4):
            found = self.processes()
            new = [p for p in found if p not in self.stopped]
            if not new:
                settled = found  # a walk that found nothing new: every process of the rank
                break
            for pid in new:
                self._signal(pid, signal.SIGSTOP)
                self.stopped.add(pid)
        if self.ticks_at_stop is None:
            self.ticks_at_stop = self.cpu_ticks(settled)

    def thaw(self) -> None:
        """Resume what freeze() stopped, first counting the CPU time it used meanwhile. Never
        raises: a process that is gone, or whose pid another user now holds, is skipped."""
        if self.group is not None:
            try:
                if self.ns_at_stop is not None:
                    ran = max(0, self.group.cpu_ns() - self.ns_at_stop)
                    self.ran_ns += ran
                    self.stops_that_ran += ran > RAN_MS * 1e6
                self.ns_at_stop = None
                self.group.thaw()
            except OSError:
                pass  # the sandbox is gone (its group with it)
            return
        if self.ticks_at_stop is not None:
            ran = max(0, self.cpu_ticks() - self.ticks_at_stop)
            self.ran_ticks += ran
            self.stops_that_ran += ran > 1
            self.ticks_at_stop = None
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        self.stopped.clear()

    @property
    def ran_ms(self) -> float:
        """CPU time the rank's processes used while stopped, in milliseconds."""
        return self.ran_ticks * RAN_MS + self.ran_ns / 1e6

    def cpu_ticks(self, processes: list[int] | None = None) -> int:
        """CPU time, in clock ticks, of this rank's processes and strays (what each used and
        what it reaped), and of what the zygote reaped (strays that ended). SIGSTOP holds a
        process, but the kernel resumes one on the candidate's behalf (a POSIX timer or a
        file's owner signal sending SIGCONT, a parent-death signal, a child's exit signal),
        and one inside a long system call keeps the CPU until it returns: no filter lists
        every way, so the time they take while stopped is measured instead."""
        found = self.processes() if processes is None else processes
        total = sum(_ticks(pid, (11, 12, 13, 14)) for pid in found)
        return total + _ticks(self.zygote, (13, 14))

    @staticmethod
    def _signal(pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError as e:
            raise FreezeUnavailable(f"cannot signal pid {pid}: {e}") from e


def _rank_group(root_pid: int, rank_pid: int) -> cgroup.Group | None:
    """A group of its own for the rank under its sandbox's, with the rank moved in (its
    threads with it), if the sandbox has a group that freezes and counts CPU; else None."""
    sandbox = cgroup.sandbox_group(root_pid, ("freezer", "cpu"))
    if sandbox is None or not (sandbox.has("freezer") and sandbox.has("cpu")):
        return None
    try:
        group = sandbox.child(f"rank_{rank_pid}", ("freezer", "cpu"))
        group.join(rank_pid)
    except OSError:
        return None
    return group
