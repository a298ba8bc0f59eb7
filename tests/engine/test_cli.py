"""`pkb eval ... --json`: the last printed line is the result as JSON (real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import figures_or_skip

from .conftest import ADVERSARIAL, CANDIDATES, FIXTURE_PROBLEMS


def _pkb_eval(path, tmp_path, *extra):
    cmd = [sys.executable, "-m", "pkb_ray.cli", "eval", "sum_ranks", str(path), "--source",
           str(FIXTURE_PROBLEMS), "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_eval_json_last_line(tmp_path):
    proc = _pkb_eval(CANDIDATES / "store_exchange.py", tmp_path, "--json", "--trials", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = json.loads(proc.stdout.strip().splitlines()[-1])
    assert d["correct"] is True and d["failure"] is None and d["trials"] == 3
    for k in ("speedup", "candidate_ms", "reference_ms", "roofline_fraction", "world_size",
              "hardware_fingerprint", "harness_version", "flags", "node_seconds"):
        assert k in d
    figures_or_skip(d)
    assert d["speedup"] > 0 and "log" not in d


def test_eval_failure_exit_code_and_human_output(tmp_path):
    proc = _pkb_eval(ADVERSARIAL / "calls_all_reduce.py", tmp_path)
    assert proc.returncode == 1
    assert "FAILED (forbidden_api)" in proc.stdout
    # The ranks raised the same error: its traceback is shown once, and the way out is said.
    assert proc.stdout.count("Traceback (most recent call last)") == 1, proc.stdout
    assert "--no-guard" in proc.stdout.splitlines()[-1]
    proc = _pkb_eval(ADVERSARIAL / "parse_error.py", tmp_path, "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout.strip().splitlines()[-1])["failure"] == "parse_error"


def _pkb_left(tmpdir) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("pkb"))


def test_eval_leaves_nothing_in_tmpdir_on_exit_and_on_sigterm(tmp_path):
    """Sandboxes (the prewarmed one too), the code copy and probes live in one run root
    under TMPDIR, removed at exit and on SIGTERM (each `pkb eval` used to leave a pkb_sbx_*
    and a pkb_public behind)."""
    import os
    import signal
    import time

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    cmd = [sys.executable, "-m", "pkb_ray.cli", "eval", "sum_ranks", "", "--source", str(FIXTURE_PROBLEMS),
           "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "--json", "--trials", "2"]
    cmd[5] = str(ADVERSARIAL / "deep_tree.py")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert json.loads(proc.stdout.strip().splitlines()[-1])["failure"] == "incorrect", proc.stderr[-2000:]
    assert _pkb_left(tmpdir) == []

    cmd[5] = str(ADVERSARIAL / "hang_one_rank.py")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, env=env)
    end = time.monotonic() + 120
    while not list(tmpdir.glob("pkb_run_*/pkb_sbx_*/rank*")) and time.monotonic() < end:
        time.sleep(0.2)
    assert _pkb_left(tmpdir), "the evaluation started a sandbox"
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 128 + signal.SIGTERM
    assert _pkb_left(tmpdir) == []


def test_sandbox_line_is_calm_and_log_parts_once():
    from pkb_ray.engine.cli import distinct_log, sandbox_line

    line = sandbox_line("bwrap: bwrap as pkb-sandbox fails: Permission denied; nccl: replaced by a refusing stub")
    assert line.startswith("bwrap (the strongest available here; not stronger because: bwrap as pkb-sandbox")
    assert line.endswith("; nccl: replaced by a refusing stub")
    assert sandbox_line("bwrap+uid(pkb-sandbox)") == "bwrap+uid(pkb-sandbox)"
    # No note: the facts after the kind are not taken for one.
    full = ("bwrap+uid(pkb-sandbox); writes: /tmp and /dev/shm 2048 MiB and 65536 files each; network: no "
            "AF_INET/AF_INET6 socket, no io_uring (seccomp); nccl: replaced by a refusing stub")
    assert sandbox_line(full) == full
    noted = sandbox_line("bwrap: no user x; bwrap as x fails: denied; writes: no quota (mounting a tmpfs needs root)")
    assert noted == ("bwrap (the strongest available here; not stronger because: no user x; bwrap as x fails: "
                     "denied); writes: no quota (mounting a tmpfs needs root)")
    log = "Trace A rank1\n==== rank0.log ====\nTrace A rank0\n==== rank1.log ====\nTrace B\n"
    assert distinct_log(log) == ("Trace A rank1\n==== rank0.log ==== (the same as above)\n"
                                 "==== rank1.log ====\nTrace B")


def test_human_output_fits_100_columns_and_says_which_statistic(capsys, monkeypatch):
    """Full-precision floats, a TimingEvidence repr and the evidence dict ran to 760
    characters on one line; the speedup (paired ratios) read as contradicting the medians."""
    from pkb_ray.engine.cli import _print_human
    from pkb_ray.records import EvalResult, TimingEvidence

    monkeypatch.setenv("COLUMNS", "100")
    res = EvalResult(
        correct=True, message="correct on 5 trials; medians 0.6675 ms vs reference 0.6236 ms",
        candidate_ms=0.66751234567891234, reference_ms=0.62361234567891234, speedup=1.0112345678901234,
        speedup_ci_low=0.98123456789, speedup_ci_high=1.0412345678, flags=["guard_off"],
        timing=TimingEvidence(samples=40, floor_ms=2.8696183821397523,
                              floor_curve_ms=[[1.0, 2.8696183821397523], [4.0, 2.9709445880931593]] * 4),
        evidence={"seconds": {f"timing.phase_{i}": 0.1234567 * i for i in range(40)}})
    _print_human(res, guarded=False, problem="allreduce", candidate="reference.py")
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100, out
    assert "2.8696183821397523" not in out and "TimingEvidence(" not in out and "2.87" in out
    assert "1.01 [0.981, 1.04] (the median of the 40 paired per-sample ratios" in out
    assert "0.6675 (the median of the candidate's own samples)" in out
