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
