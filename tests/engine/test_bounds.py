"""A sandbox's bounds (engine/launch/bounds.py): sized from the problem and the node, held by
its cgroup where one can be had, by rlimits where not; on real processes."""

from __future__ import annotations

import os
import pwd
import resource
import subprocess
import sys

import pytest

from pkb_ray.engine.launch import bounds

FORKS = r"""
import os, signal, sys
made = 0
for _ in range(int(sys.argv[1])):
    try:
        if os.fork() == 0:
            signal.pause()
    except OSError:
        break
    made += 1
try:
    big = bytearray(int(sys.argv[2]))
    took = "yes"
except MemoryError:
    took = "no"
print(made, took, flush=True)
os.killpg(0, signal.SIGKILL)
"""


def test_sizes_grow_with_ranks_and_footprint_and_stop_at_the_nodes_share(monkeypatch):
    monkeypatch.delenv("PKB_SANDBOX_PIDS", raising=False)
    monkeypatch.delenv("PKB_SANDBOX_MEMORY_MB", raising=False)
    one, two = bounds.sandbox_bounds(1), bounds.sandbox_bounds(2)
    assert two.pids > one.pids >= bounds.PIDS_SANDBOX + bounds.PIDS_PER_RANK
    cap = bounds.NODE_MEMORY_SHARE * bounds.node_memory_bytes()
    assert two.memory_bytes == min(bounds.MEMORY_FLOOR + 2 * bounds.MEMORY_RANK_FLOOR, int(cap))
    big = bounds.sandbox_bounds(2, footprint_bytes=1 << 40)
    assert big.memory_bytes == int(cap) and bounds.sandbox_bounds(2, 1 << 40, groups=4).memory_bytes == int(cap / 4)
    monkeypatch.setenv("PKB_SANDBOX_PIDS", "99")
    assert bounds.sandbox_bounds(2).pids == 99
    monkeypatch.setenv("PKB_SANDBOX_MEMORY_MB", "zero")
    with pytest.raises(ValueError, match="PKB_SANDBOX_MEMORY_MB"):
        bounds.sandbox_bounds(2)


def test_without_a_group_rlimits_hold_and_the_description_says_which():
    """The fallback on a real process: RLIMIT_NPROC counts every process of the user (the
    pkb-sandbox user where there is one and we are root, else ours) and RLIMIT_AS each
    process's address space."""
    uid = gid = None
    python = sys.executable
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("pkb-sandbox")
            uid, gid = pw.pw_uid, pw.pw_gid
        except KeyError:
            pytest.skip("root without the pkb-sandbox user: RLIMIT_NPROC never holds for root")
        python = next((p for p in (sys.executable, "/usr/bin/python3") if _may_run(p, uid)), "")
        if not python:
            pytest.skip("no Python the pkb-sandbox user may run")
    b = bounds.Bounds(ranks=1, pids=20, memory_bytes=512 << 20)
    limits = bounds.fallback_limits(b, set(), uid, "cpu")
    assert [r for r, _ in limits] == [resource.RLIMIT_NPROC, resource.RLIMIT_AS]
    held = bounds.SandboxBounds(b, None, limits, {})
    assert "RLIMIT_NPROC" in held.text and "RLIMIT_AS 0.5 GiB per process" in held.text
    assert "freezing: signals" in held.text
    p = subprocess.run([python, "-c", FORKS, "200", str(1 << 30)], capture_output=True, text=True,
                       timeout=120, preexec_fn=held.preexec(uid, gid), cwd="/", start_new_session=True)
    made, took = p.stdout.split()
    assert int(made) <= 20 and took == "no", p.stdout
    assert bounds.fallback_limits(b, {"pids", "memory"}, uid, "cpu") == []
    assert bounds.fallback_limits(b, set(), 0, "cuda") == []  # root is never counted; CUDA needs its reservations


def _may_run(path: str, uid: int) -> bool:
    """Whether `uid` may reach and run `path` (every directory above it searchable)."""
    try:
        probe = subprocess.run(["runuser", "-u", pwd.getpwuid(uid).pw_name, "--", path, "-c", "pass"],
                               capture_output=True, timeout=60)
    except OSError:
        return False
    return probe.returncode == 0
