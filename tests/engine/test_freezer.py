"""The judge's freezer (engine/judge/freezer.py) on a real process tree shaped like a sandbox
with no pid namespace: a zygote that adopts orphans, two ranks, a child of rank 0 and an
orphan rank 0 left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from pkb_ray.engine.judge.freezer import FreezeUnavailable, RankFreezer, children

ZYGOTE = r"""
import ctypes, os, signal, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as worker/zygote.py
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # held until rank 0 waits for it
ranks = []
for r in range(2):
    pid = os.fork()
    if pid == 0:
        if r == 0:  # its children come when asked (after the judge looked: no candidate yet)
            signal.sigwait({signal.SIGUSR1})
            if os.fork() == 0:          # a child that stays
                time.sleep(600); os._exit(0)
            leaver = os.fork()
            if leaver == 0:             # a child that leaves an orphan behind
                if os.fork() == 0:
                    time.sleep(600); os._exit(0)
                os._exit(0)
            os.waitpid(leaver, 0)
        time.sleep(600); os._exit(0)
    ranks.append(pid)
print(" ".join(map(str, ranks)), flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(600)
"""


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _wait_for(cond, timeout_s: float = 5.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def tree():
    p = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdout=subprocess.PIPE, text=True)
    try:
        rank0, rank1 = map(int, p.stdout.readline().split())
        yield p.pid, rank0, rank1
    finally:
        for pid in [q for q in _all(p.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.kill()
        p.wait()


def _all(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def test_a_rank_its_children_and_orphans_stop_and_resume_and_nothing_else(tree):
    zygote, rank0, rank1 = tree
    f = RankFreezer(zygote, rank0, 2)
    assert f.rank_pid == rank0 and f.ranks == {rank0, rank1}
    os.kill(rank0, signal.SIGUSR1)
    # rank 0's child, and the orphan re-parented to the zygote
    assert _wait_for(lambda: len(children(rank0)) == 1 and len(children(zygote)) == 3)
    child = children(rank0)[0]
    orphan = next(c for c in children(zygote) if c not in (rank0, rank1))
    assert sorted(f.processes()) == sorted([rank0, child, orphan])
    f.freeze()
    assert _wait_for(lambda: all(_state(p) == "T" for p in (rank0, child, orphan)))
    assert _state(rank1) != "T" and _state(zygote) != "T"
    f.thaw()
    assert _wait_for(lambda: all(_state(p) != "T" for p in (rank0, child, orphan)))


def test_a_pid_not_in_the_sandbox_or_ranks_not_all_there_are_refused(tree):
    zygote, rank0, _ = tree
    with pytest.raises(FreezeUnavailable, match="no process of pid"):
        RankFreezer(zygote, os.getpid(), 2)
    # A judge looking before every rank was forked would take the missing one for a stray.
    with pytest.raises(FreezeUnavailable, match="2 children, not the 3 ranks"):
        RankFreezer(zygote, rank0, 3)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")
def test_a_judge_that_may_not_signal_the_rank_says_so_at_once(tree):
    """A judge of another user than its workers (uid sandbox, no root) cannot stop them: it
    learns it before the timing phase (the result is flagged *_not_frozen), not halfway
    through it."""
    zygote, rank0, _ = tree
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setuid(65534)
            RankFreezer(zygote, rank0, 2)
            msg = b"built"
        except FreezeUnavailable as e:
            msg = str(e).encode()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            msg = repr(e).encode()
        os.write(w, msg)
        os._exit(0)
    os.close(w)
    said = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    assert said.startswith("cannot signal pid"), said


def test_what_a_stopped_process_runs_is_counted(tree):
    """SIGSTOP can be undone or delayed on the candidate's behalf (a timer's SIGCONT, a long
    system call): the CPU time the stopped processes use before the thaw is counted."""
    zygote, rank0, _ = tree
    f = RankFreezer(zygote, rank0, 2)
    f.freeze()
    f.thaw()
    assert f.ran_ticks == 0  # a sleeping process, stopped: nothing
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        f.processes = lambda: [spinner.pid]  # a process of the rank's, as far as the count goes
        f.freeze()
        os.kill(spinner.pid, signal.SIGCONT)  # resumed behind the judge's back
        time.sleep(0.3)
        f.thaw()
        assert f.ran_ticks * 1000 / os.sysconf("SC_CLK_TCK") >= 100, f.ran_ticks
    finally:
        spinner.kill()
        spinner.wait()


RECLONER = r"""
import ctypes, os, signal, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each generation reaped by the kernel
if os.fork():
    os.write(1, b"%d\n" % os.getpid())  # one write each: the two lines never interleave
    signal.pause()
    os._exit(0)
os.write(1, b"%d\n" % os.getpid())
sys.stdin.readline()  # spins once the test has put it in its group
libc = ctypes.CDLL(None, use_errno=True)
SYS_CLONE = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
end = time.monotonic() + 30
while time.monotonic() < end:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.0003:
        pass
    if libc.syscall(SYS_CLONE, 0x00008000 | signal.SIGCHLD, 0, 0, 0, 0) > 0:  # CLONE_PARENT
        os._exit(0)
"""


def _sandbox_group():
    from pkb_ray.engine import cgroup
    from pkb_ray.engine.launch import bounds

    run = bounds.run_group()
    if not (run.group.has("freezer") and run.group.has("cpu")):
        pytest.skip("no writable cgroup with a freezer and CPU accounting here (needs root)")
    return run.group.child(f"{cgroup.SANDBOX_PREFIX}freezer_test_{os.getpid()}", cgroup.FEATURES)


def test_a_rank_in_a_group_is_frozen_whole_and_charged_for_what_reaped_processes_used(tree):
    """A spinner that re-clones itself with CLONE_PARENT every 0.3 ms under a parent that
    ignores SIGCHLD: no walk of the tree holds it and no /proc/<pid>/stat keeps its CPU. In
    the rank's group it stops with the rank, and its CPU is in the group's count."""
    zygote, rank0, rank1 = tree
    sandbox = _sandbox_group()
    spinner = None
    try:
        for pid in (zygote, rank0, rank1):
            sandbox.join(pid)
        f = RankFreezer(zygote, rank0, 2)
        assert f.group is not None and f.how.startswith("cgroup"), f.how
        spinner = subprocess.Popen([sys.executable, "-c", RECLONER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        for pid in (int(spinner.stdout.readline()), int(spinner.stdout.readline())):  # the helper and the spinner
            f.group.join(pid)  # as if the rank had started it: every generation is born here
        spinner.stdin.write("go\n")
        spinner.stdin.flush()
        assert _wait_for(lambda: f.group.cpu_ns() > 50e6, 20), "the spinner never ran"
        f.freeze()
        assert f.group.freeze(wait=True), "the group did not freeze"
        held = f.group.pids()
        before = f.group.cpu_ns()
        time.sleep(0.3)
        assert f.group.pids() == held, "a generation was born while frozen"
        assert f.group.cpu_ns() - before < 5e6
        assert _state(rank1) != "T" and rank1 not in held and zygote not in held
        f.thaw()
        assert f.ran_ms < 20, f.ran_ms
        assert _wait_for(lambda: f.group.pids() != held), "the spinner did not resume"
        # What the reaped generations used is all in the group's count, and in no process's.
        # Long enough for the reaped generations to outweigh what the live helper used
        # (20-30 ms of it on a loaded machine).
        assert _wait_for(lambda: f.group.cpu_ns() > before + 200e6, 20), "the spinner stopped spinning"
        used_ms = f.group.cpu_ns() / 1e6
        visible_ms = sum(_cpu_ms(p) for p in f.group.pids())
        assert used_ms > 50 and visible_ms < used_ms / 2, (used_ms, visible_ms)
    finally:
        if spinner is not None:
            spinner.kill()
        assert sandbox.remove(), "the group could not be removed"
    assert not any(os.path.exists(p) for p in sandbox.paths)


def _cpu_ms(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            after = fh.read().rsplit(")", 1)[1].split()
        return sum(int(after[i]) for i in (11, 12, 13, 14)) * 1e3 / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0
