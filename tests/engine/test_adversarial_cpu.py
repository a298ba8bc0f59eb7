"""Every CPU-runnable adversarial candidate gets its class (real rank processes, gloo).

Each file under adversarial/ opens with the hack and how it passes a weaker harness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pkb_ray.records import FailureClass

from .conftest import ADVERSARIAL, CANDIDATES

F = FailureClass


@pytest.mark.parametrize("name, failure, rank, trial, flag", [
    ("segfault", F.RUNTIME_ERROR, None, 0, "ctypes"),
    ("os_exit", F.RUNTIME_ERROR, 0, 0, None),
    ("first_call_only", F.INCORRECT, None, 1, None),
    ("cached_output", F.INCORRECT, None, 1, "module_level_state"),
    ("calls_all_reduce", F.FORBIDDEN_API, None, 0, None),
    ("swallows_forbidden", F.FORBIDDEN_API, None, 0, "swallows_exceptions"),
    ("process_group_method", F.FORBIDDEN_API, None, 0, None),
    ("wrong_one_rank", F.INCORRECT, 1, 0, None),
    ("writes_nan", F.NAN, None, 0, None),
    ("wrong_type", F.INCORRECT, None, 0, None),
    ("lazy_when_timed", F.INCORRECT, None, 5, "module_level_state"),
    ("parse_error", F.PARSE_ERROR, None, None, None),
])
def test_adversarial_gets_its_class(run_eval, name, failure, rank, trial, flag):
    res = run_eval(ADVERSARIAL / f"{name}.py")
    assert res.failure == failure, (res.message, res.log[-2000:])
    assert not res.correct
    assert res.message
    if rank is not None:
        assert res.failing_rank == rank
    if trial is not None:
        assert res.failing_trial == trial, res.message
    if flag:
        assert flag in res.flags
    assert res.harness_version and res.world_size == 2 and res.device == "cpu"


def test_parse_error_starts_no_process(run_eval):
    res = run_eval(ADVERSARIAL / "parse_error.py")
    assert res.failure == F.PARSE_ERROR and "line" in res.message
    assert res.log == "" and res.node_seconds < 5


def test_timer_patch_is_flagged_and_does_not_fool_the_clock(run_eval):
    honest = run_eval(CANDIDATES / "store_exchange.py")
    patched = run_eval(ADVERSARIAL / "patches_timer.py")
    assert honest.correct and patched.correct, (patched.message, patched.log[-2000:])
    assert "patches_timer" in patched.flags
    # Read through the patched clock, a call would look 1000x faster; through the harness's
    # own clock the two (same work) stay within a small factor of each other.
    assert patched.candidate_ms > honest.candidate_ms / 20


def test_candidate_sees_no_credentials(run_eval, monkeypatch):
    monkeypatch.setenv("PKB_TEST_API_KEY", "sk-should-never-leak")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "never")
    res = run_eval(ADVERSARIAL / "reads_env.py")
    assert res.correct, (res.message, res.log[-2000:])


def test_correct_candidate_reports_times(run_eval):
    res = run_eval(CANDIDATES / "store_exchange.py")
    assert res.correct and res.failure is None, (res.message, res.log[-3000:])
    assert res.compiled and res.trials == 5
    assert res.candidate_ms > 0 and res.reference_ms > 0
    assert res.speedup == pytest.approx(res.reference_ms / res.candidate_ms)
    assert res.max_abs_error is not None and res.max_abs_error < 1e-4
    assert res.hardware_fingerprint.startswith("cpu-")
    assert res.roofline_ms is None and res.roofline_fraction is None  # no cpu roofline, by design
    assert res.node_seconds > 0


def _children_of(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def test_same_process_survives_hang_and_crash(run_eval):
    """A hang and a crash cost their rank processes only: the next candidate in this very
    process evaluates correctly, and nothing is left behind (ranks, zombies, /dev/shm)."""
    from pkb_ray.engine import launcher

    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    hang = run_eval(ADVERSARIAL / "hang_one_rank.py")
    assert hang.failure == F.TIMEOUT and hang.failing_rank == 1 and hang.failing_trial == 0, hang.message
    assert "trial:0" in hang.message
    ok = run_eval(CANDIDATES / "store_exchange.py")
    assert ok.correct, (ok.message, ok.log[-2000:])
    crash = run_eval(ADVERSARIAL / "segfault.py")
    assert crash.failure == F.RUNTIME_ERROR and "SIGSEGV" in crash.message
    ok2 = run_eval(CANDIDATES / "store_exchange.py")
    assert ok2.correct, (ok2.message, ok2.log[-2000:])
    server = launcher._forkserver_popen
    assert server is not None and server.poll() is None
    assert _children_of(server.pid) == []  # every rank killed and reaped
    if shm_before or os.path.isdir("/dev/shm"):
        leaked = set(os.listdir("/dev/shm")) - shm_before
        assert not {n for n in leaked if "torch" in n or n.startswith(("psm_", "mp-"))}, leaked


def test_no_guard_lets_the_reference_itself_run(run_eval):
    res = run_eval(ADVERSARIAL / "calls_all_reduce.py", guard=False, time_candidate=False)
    assert res.correct, (res.message, res.log[-2000:])
    assert "guard_off" in res.flags and res.candidate_ms is None


def test_killing_the_forkserver_costs_one_candidate(run_eval):
    from pkb_ray.engine import launcher

    res = run_eval(ADVERSARIAL / "kills_forkserver.py")
    assert res.failure == F.RUNTIME_ERROR, (res.message, res.log[-2000:])
    ok = run_eval(CANDIDATES / "store_exchange.py")
    assert ok.correct, (ok.message, ok.log[-2000:])
    assert launcher._forkserver_popen.poll() is None  # a new forkserver is up
