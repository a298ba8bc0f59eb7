"""Every CPU-runnable adversarial candidate gets its class (real judges and sandboxed
workers, gloo on CPU), none is counted correct and fast, and the node goes on evaluating.

Each file under adversarial/ opens with the hack and how it passes a weaker harness."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pkb_ray.engine import evaluate
from pkb_ray.records import FailureClass

from tests.helpers import figures_or_skip

from .conftest import ADVERSARIAL, CANDIDATES, LOADER, request_for

F = FailureClass

FORGED_FRAME = (
    "in 3 of 6 full-suite runs on the 2-core machine one of the two frame-forging attacks ran "
    "out its 6 s trial before its judge acted on the frame (timeout instead of runtime_error); "
    "never alone or in file order. Likely cause: the candidate's worker runs at SCHED_IDLE on "
    "cpu, and other processes' load starves it past the trial's wall-clock limit (under a load "
    "of 20-40, fills_inodes timed out in trial 0 the same way).")


def _not_correct_and_fast(res) -> None:
    assert not (res.correct and (res.speedup or 0) > 1), (res.message, res.speedup)
    assert res.sandbox, "every result names its sandbox"


@pytest.mark.parametrize("name, failures, rank, trial, flag", [
    # crashes and exits
    ("segfault", {F.RUNTIME_ERROR}, None, 0, "ctypes"),
    ("os_exit", {F.RUNTIME_ERROR}, 0, 0, None),
    ("fails_one_rank_at_load", {F.RUNTIME_ERROR}, 0, None, None),
    ("kills_parent", {F.TIMEOUT, F.RUNTIME_ERROR}, None, 0, None),
    # replays and laziness
    ("first_call_only", {F.INCORRECT}, None, 1, None),
    ("cached_output", {F.INCORRECT}, None, 1, "module_level_state"),
    ("lazy_when_timed", {F.INCORRECT}, None, 5, "module_level_state"),
    ("replays_by_pointer", {F.INCORRECT}, None, 1, "module_level_state"),
    ("stale_empty", {F.INCORRECT, F.NAN}, None, 0, None),
    ("mutates_input", {F.INCORRECT}, None, 0, None),
    ("tensor_subclass", {F.INCORRECT}, None, 0, None),
    ("lazy_result", {F.INCORRECT}, None, 0, None),
    ("thread_work", {F.INCORRECT}, None, 0, "spawns_threads_or_processes"),
    # reaching into the harness
    ("walks_frames", {F.INCORRECT}, None, 0, None),
    ("scans_gc", {F.INCORRECT}, None, 0, None),  # the slot it finds holds the stand-in's zeros
    ("regenerates_inputs", {F.INCORRECT}, None, 0, None),
    ("forges_done", {F.INCORRECT}, None, 0, None),
    ("forges_verdict", {F.RUNTIME_ERROR}, None, 0, None),
    pytest.param("nests_frame", {F.RUNTIME_ERROR}, None, 0, None, marks=pytest.mark.quarantine(FORGED_FRAME)),
    ("shrinks_arena", {F.RUNTIME_ERROR}, None, 0, None),
    # frames no reader could use: a 401-digit number (float() of it raised OverflowError in
    # the judge, called harness_error) and 75,000 dict keys that hash alike (34 s of a judge)
    ("overflows_report", {F.RUNTIME_ERROR}, None, None, None),
    ("collides_keys", {F.RUNTIME_ERROR}, None, 0, None),
    pytest.param("forges_setup_failure", {F.RUNTIME_ERROR}, None, 0, None,
                 marks=pytest.mark.quarantine(FORGED_FRAME)),
    # collectives, however reached
    ("calls_all_reduce", {F.FORBIDDEN_API}, None, 0, None),
    ("swallows_forbidden", {F.FORBIDDEN_API}, None, 0, "swallows_exceptions"),
    ("process_group_method", {F.FORBIDDEN_API}, None, 0, None),
    ("borrows_harness_section", {F.FORBIDDEN_API, F.INCORRECT, F.RUNTIME_ERROR}, None, 0, None),
    ("unwraps_guard", {F.FORBIDDEN_API}, None, 0, None),
    ("gloo_group", {F.RUNTIME_ERROR}, None, 0, None),
    # plain wrong answers
    ("wrong_one_rank", {F.INCORRECT}, 1, 0, None),
    ("wrong_then_hang", {F.INCORRECT}, 0, 0, None),
    ("writes_nan", {F.NAN}, None, 0, None),
    ("wrong_type", {F.INCORRECT}, None, 0, None),
    ("parse_error", {F.PARSE_ERROR}, None, None, None),
])
def test_adversarial_gets_its_class(run_eval, name, failures, rank, trial, flag):
    res = run_eval(ADVERSARIAL / f"{name}.py")
    # What every hack wants, and what no quarantine excuses: a pass, or a failure the
    # harness takes for its own (deferred, never recorded).
    if res.correct or res.failure == F.HARNESS_ERROR:
        pytest.fail(f"{name}: {res.failure} {res.message}")
    assert res.failure in failures, (res.failure, res.message, res.log[-2000:])
    assert not res.correct and res.message
    if rank is not None:
        assert res.failing_rank == rank, res.message
    if trial is not None:
        assert res.failing_trial == trial, res.message
    if flag:
        assert flag in res.flags
    assert res.harness_version and res.world_size == 2 and res.device == "cpu"
    _not_correct_and_fast(res)


@pytest.mark.parametrize("name", ["probes_files", "opens_socket", "reads_judge_memory", "reads_env"])
def test_probes_find_nothing(run_eval, name, monkeypatch):
    """Each probe raises naming what it found; correct means it found nothing."""
    monkeypatch.setenv("PKB_TEST_API_KEY", "sk-should-never-leak")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "never")
    res = run_eval(ADVERSARIAL / f"{name}.py")
    assert res.correct, (res.message, res.log[-2000:])
    _not_correct_and_fast(res)


def test_logs_swapped_for_links_show_nothing_of_the_harness(run_eval):
    res = run_eval(ADVERSARIAL / "symlinks_logs.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    assert "PATH=" not in res.log + res.message and "HOME=" not in res.log + res.message, res.log[-2000:]


def test_a_frame_nested_deep_is_the_candidates_failure_naming_the_limit(run_eval):
    res = run_eval(ADVERSARIAL / "nests_frame.py")
    assert res.failure == F.RUNTIME_ERROR and "exceeds the limit of" in res.message, res.message


def test_segfault_names_the_signal(run_eval):
    res = run_eval(ADVERSARIAL / "segfault.py")
    assert res.failure == F.RUNTIME_ERROR and "SIGSEGV" in res.message, res.message


def test_wrong_then_hang_blames_the_wrong_answer_fast(run_eval):
    """The node stops the sandbox at rank 0's verdict: no wait for rank 1's trial limit."""
    res = run_eval(ADVERSARIAL / "wrong_then_hang.py")
    assert res.failure == F.INCORRECT and res.failing_rank == 0, res.message
    assert res.node_seconds < 30


def test_parse_error_starts_no_process(run_eval):
    res = run_eval(ADVERSARIAL / "parse_error.py")
    assert res.failure == F.PARSE_ERROR and "line" in res.message
    assert res.log == "" and res.node_seconds < 5


def test_timer_patches_do_not_fool_the_judge(run_eval):
    honest = run_eval(CANDIDATES / "store_exchange.py")
    module_clock = run_eval(ADVERSARIAL / "patches_timer.py")
    worker_clock = run_eval(ADVERSARIAL / "patches_worker_clock.py")
    assert honest.correct and module_clock.correct and worker_clock.correct, worker_clock.message
    assert "patches_timer" in module_clock.flags
    # The worker's own clock is 1000x slow: flagged, and it changes no figure (the judge's
    # window times both halves; the report is evidence only).
    assert "worker_clock_disagrees" in worker_clock.flags, worker_clock.timing
    assert worker_clock.judge_clock_ratio < 0.1
    assert worker_clock.timing is not None and worker_clock.timing.instrument == "judge_window"
    for res in (module_clock, worker_clock):
        assert res.candidate_ms > honest.candidate_ms / 5, (res.candidate_ms, honest.candidate_ms)
        _not_correct_and_fast(res)


def test_content_replay_never_hits(run_eval):
    """Fresh contents for every timed call: a content-keyed cache only misses, so the
    candidate costs what its honest work costs."""
    honest = run_eval(CANDIDATES / "store_exchange.py")
    res = run_eval(ADVERSARIAL / "replays_by_content.py")
    assert res.correct, res.message
    assert res.candidate_ms > honest.candidate_ms / 3, (res.candidate_ms, honest.candidate_ms)
    _not_correct_and_fast(res)


def test_correct_candidate_reports_times_and_protections(run_eval):
    res = run_eval(CANDIDATES / "store_exchange.py")
    assert res.correct and res.failure is None, (res.message, res.log[-3000:])
    # Where the node's own seconds went, beside the judges' phases (bench_groups_gpu.py
    # compares them grouped and alone).
    sec = res.evidence["seconds"]
    assert sec["node_prepare"] > 0 and sec["node_cpu"] > 0
    assert sec["sandbox_wait"] <= sec["node_handout"] <= sec["node_run"]
    figures_or_skip(res)
    assert res.compiled and res.trials == 5
    assert res.candidate_ms > 0 and res.reference_ms > 0
    # The speedup is the median of the pairs' ratios, not reference_ms / candidate_ms (each
    # half's own median): the two differ where samples vary (stats.speedup_interval).
    assert "median of the pairs' ratios" in res.message
    assert res.speedup_ci_low <= res.speedup <= res.speedup_ci_high
    assert res.checked_timed_calls >= 5
    assert "interleaved" in res.flags
    # Honest: the worker accounts for most of what the judge saw (above 1 when the calibrated
    # floor overestimates a run's overhead: a loaded 2-core machine makes it noisy).
    assert res.judge_clock_ratio is not None and 0.3 < res.judge_clock_ratio < 10
    assert "worker_clock_disagrees" not in res.flags
    ev = res.timing
    assert ev is not None and ev.samples >= 5 and ev.floor_ms > 0 and not ev.unmeasurable
    assert res.max_abs_error is not None and res.max_abs_error < 1e-4
    assert res.hardware_fingerprint.startswith("cpu-")
    # The CPU plausibility floor (bytes at every core's copy rate) lies far below an honest run.
    assert res.roofline_ms is not None and 0 < res.roofline_fraction < 0.5
    assert res.node_seconds > 0


def _children(pid: int) -> list[int]:
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


def test_node_survives_hang_crash_and_a_killed_parent(run_eval):
    """A hang, a crash and a killed zygote cost their sandbox only: the next candidate on
    the same judges evaluates correctly, and no sandbox is left behind."""
    import importlib

    ev = importlib.import_module("pkb_ray.engine.node.evaluation")

    hang = run_eval(ADVERSARIAL / "hang_one_rank.py")
    assert hang.failure == F.TIMEOUT and hang.failing_rank == 1 and hang.failing_trial == 0, hang.message
    for name in ("segfault", "kills_parent"):
        bad = run_eval(ADVERSARIAL / f"{name}.py")
        assert not bad.correct
        ok = run_eval(CANDIDATES / "store_exchange.py")
        assert ok.correct, (name, ok.message, ok.log[-2000:])
    nodes = ev.LOCAL.nodes()
    assert len(nodes) == 1 and len(nodes[0].judges) == 2
    judge_pids = {j.popen.pid for j in nodes[0].judges}
    spares = {sb.proc.popen.pid for sb in nodes[0].sandboxes_ahead()}
    # The last evaluation's sandboxes (candidate and reference) are killed at once and reaped
    # by a background thread (SandboxProcess.cleanup_later): on a loaded 2-core machine they
    # can still be unreaped when the result arrives (CI saw two). Left behind means still
    # there once that reaping, bounded at 10 s per sandbox, has had its time.
    deadline = time.monotonic() + 25
    while True:
        left = [p for p in _children(os.getpid()) if p not in judge_pids and p not in spares]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, left


def test_no_guard_lets_the_reference_itself_run(run_eval):
    res = run_eval(ADVERSARIAL / "calls_all_reduce.py", guard=False, time_candidates=False)
    assert res.correct, (res.message, res.log[-2000:])
    assert "guard_off" in res.flags and res.candidate_ms is None


def _leftovers(pattern: str) -> list[str]:
    import glob
    import tempfile

    base = tempfile.gettempdir()
    return glob.glob(f"{base}/pkb_sbx_*/{pattern}") + glob.glob(f"{base}/pkb_run_*/pkb_sbx_*/{pattern}")


def _leftover_markers() -> list[str]:
    return _leftovers("pkb_deep_marker")


def test_a_deep_unreadable_tree_is_removed_with_its_sandbox(run_eval):
    """A 3000-level tree, an unreadable directory and a link in the sandbox's directory:
    removed with the sandbox (shutil.rmtree left the tree behind)."""
    import time

    res = run_eval(ADVERSARIAL / "deep_tree.py")
    assert res.failure == F.INCORRECT, (res.failure, res.message)
    end = time.monotonic() + 30  # the sandbox is removed in the background after the verdict
    while _leftover_markers() and time.monotonic() < end:
        time.sleep(0.2)
    assert not _leftover_markers()


def test_a_candidate_that_fills_its_disk_meets_the_quota(run_eval):
    """Writes until the disk is full: the sandbox's /tmp is a tmpfs with a quota (where the
    evaluator is root), so the write fails in the candidate, the judge goes on, and nothing
    of it is left on the host."""
    from pkb_ray.engine.launch import plan_sandbox

    if not plan_sandbox("auto").tmp_quota:
        pytest.skip("no quota here: mounting a tmpfs needs root (the result's sandbox field says so)")
    res = run_eval(ADVERSARIAL / "fills_disk.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    assert "No space left on device" in res.message + res.log, res.log[-2000:]
    assert "writes: /tmp" in res.sandbox and "files each" in res.sandbox, res.sandbox
    end = time.monotonic() + 30  # removed in the background after the verdict
    while _leftovers("pkb_fill_marker_rank*") and time.monotonic() < end:
        time.sleep(0.2)
    assert not _leftovers("pkb_fill_marker_rank*")
    assert not glob_host_shm(), "a marker is left in the host's /dev/shm"


def glob_host_shm() -> list[str]:
    import glob

    return glob.glob("/dev/shm/pkb_fill_marker_rank*")


def test_a_rank_can_change_neither_its_core_nor_its_scheduling_class(run_eval):
    """Pinned and yielding on GPUs (engine/node/cpu_pins.py), a guarded rank cannot undo either:
    the filter refuses sched_setscheduler and sched_setaffinity (here on CPU, as there)."""
    res = run_eval(ADVERSARIAL / "moves_core.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    assert "PermissionError" in res.message and "sched_setscheduler was allowed" not in res.log, res.log[-1500:]
    assert "setsid was allowed" not in res.log, res.log[-1500:]


def test_no_write_past_the_quota_and_no_reach_into_the_zygote(run_eval):
    """Where the quota holds (root), bubblewrap's own / and /dev are read-only and a new user
    namespace is refused (unshare, clone; clone3 answers ENOSYS); a rank can neither ptrace
    its zygote nor read its memory."""
    from pkb_ray.engine.launch import plan_sandbox

    plan = plan_sandbox("auto")
    if not (plan.tmp_quota and plan.kind.startswith("bwrap")):
        pytest.skip("needs bubblewrap and root (the quota's tmpfs)")
    res = run_eval(ADVERSARIAL / "escapes_quota.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    for refusal in ("/pkb_escape_marker: EROFS", "/dev/pkb_escape_marker: EROFS", "unshare: E", "clone: EACCES",
                    "clone3: ENOSYS"):
        assert refusal in res.message, res.message
    res = run_eval(ADVERSARIAL / "attaches_zygote.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    assert "ptrace: EACCES" in res.message and "mem: E" in res.message, res.message


def test_data_through_the_store_is_flagged(run_eval):
    """The store stays open (symmetric memory needs it; on CPU it is the stand-in): a
    candidate that moves data through it is flagged store_channel, one that does not is not."""
    res = run_eval(CANDIDATES / "store_exchange.py")
    assert res.correct and "store_channel" in res.flags, res.flags
    res = run_eval(ADVERSARIAL / "wrong_type.py")
    assert "store_channel" not in res.flags, res.flags


def test_empty_files_stop_at_the_quota_of_files(run_eval):
    """Millions of empty files cost no bytes: the sandbox's /tmp and /dev/shm are tmpfs
    bounded in files too (sandbox.TMP_QUOTA_FILES), where the evaluator is root."""
    import re

    from pkb_ray.engine.launch import TMP_QUOTA_FILES, plan_sandbox

    plan = plan_sandbox("auto")
    if not (plan.tmp_quota and plan.kind.startswith("bwrap")):
        pytest.skip("needs bubblewrap and root (the quota's tmpfs)")
    res = run_eval(ADVERSARIAL / "fills_inodes.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    refused = re.findall(r"(/dev/shm|/tmp) refused file (\d+): ENOSPC", res.message)
    assert [d for d, _ in refused] == ["/dev/shm", "/tmp"], res.message
    assert all(int(n) <= TMP_QUOTA_FILES for _, n in refused), res.message
    assert f"{TMP_QUOTA_FILES} files each" in res.sandbox, res.sandbox
    end = time.monotonic() + 30  # removed in the background after the verdict
    while _leftovers("pkb_inode_marker_rank*") and time.monotonic() < end:
        time.sleep(0.5)
    assert not _leftovers("pkb_inode_marker_rank*")


def test_on_cpu_the_candidate_runs_at_sched_idle_unpinned(run_eval, tmp_path):
    """On cpu both workers' ranks run at SCHED_IDLE and neither is pinned (engine/node/cpu_pins.py:
    one scheduling class for both halves); the candidate cannot leave the class
    (test_a_rank_can_change_neither_its_core_nor_its_scheduling_class)."""
    import re

    path = tmp_path / "says_how.py"
    path.write_text("import os\n"
                    "import torch.distributed as dist\n"
                    "def solution(x):\n"
                    "    raise RuntimeError(f'rank {dist.get_rank()} cores {len(os.sched_getaffinity(0))} '\n"
                    "                       f'idle {os.sched_getscheduler(0) == os.SCHED_IDLE}')\n")
    res = run_eval(path)
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    said = re.search(r"rank \d+ cores (\d+) idle (\w+)", res.message)
    assert said, res.message
    assert said.groups() == (str(len(os.sched_getaffinity(0))), "True"), res.message


def test_a_spinner_left_running_beside_the_reference_gains_nothing(run_eval):
    """On cpu a candidate's process that spins only while the reference's half runs took
    cores from it at equal weight: 0.46 and 0.64 against 0.14-0.17 for the same exchange
    without it (2-core machine, 2026-11-26). The judges stop the candidate's rank and its
    children while the reference's half runs (engine/judge/freezer.py)."""
    honest = [run_eval(CANDIDATES / "store_exchange.py") for _ in range(2)]
    res = run_eval(ADVERSARIAL / "spins_beside_reference.py")
    assert res.correct and all(h.correct for h in honest), res.message
    assert not any(f.endswith("_not_frozen") for f in res.flags), res.flags
    figures_or_skip(res, *honest)
    best = max(h.speedup for h in honest)
    assert res.speedup < 1.5 * best, (res.speedup, [h.speedup for h in honest], res.message)
    # Stopped processes use no CPU: what the judge counted for the honest ones is nothing
    # like the 100 ms that makes a candidate implausible.
    for r in honest + [res]:
        assert r.evidence["seconds"].get("timing.stopped_cpu.candidate", 1.0) < 0.05, r.evidence


def test_descriptors_sent_with_a_broken_frame_cost_the_next_candidate_nothing(run_eval):
    """A frame's body sent a byte at a time, descriptors with each, then not JSON: the judge
    kept them all, and the next candidate on the same judges failed with EMFILE (harness_error).
    Now refused at the fifth descriptor and closed."""
    import importlib

    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    ok = run_eval(CANDIDATES / "store_exchange.py")
    assert ok.correct, (ok.failure, ok.message)
    judges = [j.popen.pid for node in ev.LOCAL.nodes() for j in node.judges]
    before = {pid: len(os.listdir(f"/proc/{pid}/fd")) for pid in judges}
    bad = run_eval(ADVERSARIAL / "leaks_fds.py")
    assert bad.failure == F.RUNTIME_ERROR, (bad.failure, bad.message)
    after = {pid: len(os.listdir(f"/proc/{pid}/fd")) for pid in judges if os.path.exists(f"/proc/{pid}")}
    assert all(after[p] <= before[p] + 8 for p in after), (before, after)
    ok = run_eval(CANDIDATES / "store_exchange.py")
    assert ok.correct, (ok.failure, ok.message)


def test_neither_a_slow_probe_nor_unseen_spinners_gain(run_eval, tmp_path):
    """slow_probe.py sleeps only in the calls that size the batch: it got one call per sample
    (k <= 25 / 15), and its speedup read 2-3x better. spins_unseen.py spins while stopped,
    resumed by timers, in processes the kernel reaps (the judge counted nothing): 0.623
    against 0.12-0.13 honest. What each relied on is checked, not its speedup: on cpu the
    honest exchange itself reads 0.10-0.43 as the reference's probe (2.4-9.4 ms) sets the
    batch at 2-8 calls (2026-11-26), too wide to tell a gain of 1.5x from chance."""
    # A cache of its own: the problem's mode cached by an earlier test (test_timing_modes.py
    # run first in one session: k=1 from a slow probe of the honest exchange under load) is
    # taken as it is, and this evaluation's probe then sizes nothing.
    res = evaluate(request_for(ADVERSARIAL / "slow_probe.py", str(tmp_path)), load_problem=LOADER)
    assert res.correct, (res.failure, res.message)
    assert res.timing is not None and res.timing.calls_per_sample > 1, res.message
    res = run_eval(ADVERSARIAL / "spins_unseen.py")
    assert res.correct or res.failure == F.IMPLAUSIBLE, (res.failure, res.message)
    assert "timer_create" in res.log and "Errno 13" in res.log, res.log[-2000:]  # EACCES: no timer


def test_a_spinner_inside_calls_sigstop_cannot_interrupt_is_implausible(run_eval):
    """A process stops only when its system call returns (mmap(MAP_POPULATE) of half a GiB:
    hundreds of ms), and the kernel can resume one on its behalf (timers, exit and death
    signals): no filter covers every way, so the judge counts the CPU time its stopped
    processes use."""
    honest = [run_eval(CANDIDATES / "store_exchange.py") for _ in range(2)]
    res = run_eval(ADVERSARIAL / "stops_late.py")
    # Whether a stop lands inside one of its calls is a matter of timing: most evaluations
    # catch it (0.76 s of CPU while stopped in one), and one that does not gains nothing.
    if res.failure == F.IMPLAUSIBLE:
        assert "while stopped for the reference's halves" in res.message, res.message
    else:
        assert res.correct, (res.failure, res.message)
        figures_or_skip(res, *honest)
        assert res.speedup < 1.5 * max(h.speedup for h in honest), (res.speedup, [h.speedup for h in honest])


def test_a_rank_cannot_resume_a_stopped_process(run_eval):
    """What the judges stop between halves stays stopped: the filter refuses SIGCONT by any
    of the calls that send a signal."""
    res = run_eval(ADVERSARIAL / "resumes_processes.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    for refusal in ("kill: EACCES", "tgkill: EACCES", "pidfd_send_signal: EACCES"):
        assert refusal in res.message, res.message


def test_the_kernel_is_not_asked_to_resume_a_stopped_process(run_eval):
    """Nor may the kernel be made to send SIGCONT for the candidate: by a timer, a child's exit
    signal, a parent's death signal or a descriptor's I/O signal."""
    res = run_eval(ADVERSARIAL / "resumes_by_kernel.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    for refusal in ("timer_create: EACCES", "clone: EACCES", "prctl: EACCES", "fcntl: EACCES"):
        assert refusal in res.message, res.message


def test_a_spare_sandbox_whose_rank_died_is_not_taken(run_eval):
    """The sandboxes started ahead set up their ranks at once; one whose rank died before its
    evaluation (a GPU filled by the previous one) is replaced, not handed a candidate."""
    import importlib
    import signal

    from pkb_ray.engine.judge.freezer import children

    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    assert run_eval(CANDIDATES / "store_exchange.py").correct
    (node,) = ev.LOCAL.nodes()
    spare = node.ahead[("candidate", True)][0]
    assert spare.proc.wait_ready(60)
    zygote = _descendant_running(spare.proc.popen.pid, "pkb_ray.engine.worker.zygote")
    end = time.monotonic() + 30
    while len(children(zygote)) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    os.kill(children(zygote)[0], signal.SIGKILL)
    while "exited" not in spare.proc.log_tail("zygote.log") and "killed" not in spare.proc.log_tail("zygote.log"):
        assert time.monotonic() < end, spare.proc.log_tail("zygote.log")
        time.sleep(0.05)
    res = run_eval(CANDIDATES / "store_exchange.py")
    assert res.correct, (res.failure, res.message)
    assert res.evidence["sandbox_taken"] == "started: a rank of the one ahead had ended", res.evidence


def test_an_overlapping_node_keeps_a_second_sandbox_ahead(run_eval, monkeypatch):
    """Where evaluations overlap their successors' start (GPU nodes: cpu_pins), the sandbox
    after the spare is started too, and becomes the spare when the spare is taken: a sandbox
    that takes longer to set up than an evaluation lasts is still ready in time."""
    import importlib

    from pkb_ray.engine.node.judge_node import JudgeNode

    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    monkeypatch.setattr(JudgeNode, "_overlaps", property(lambda self: True))
    assert run_eval(CANDIDATES / "store_exchange.py").correct
    (node,) = ev.LOCAL.nodes()
    keys = {("candidate", True), ("reference", False)}  # (earlier tests on this node may have left others)
    assert all(len(node.ahead.get(key, [])) == 2 for key in keys), node.ahead
    second = {key: node.ahead[key][1].proc.popen.pid for key in keys}
    res = run_eval(CANDIDATES / "store_exchange.py")
    assert res.correct, (res.failure, res.message)
    assert {key: node.ahead[key][0].proc.popen.pid for key in keys} == second
    assert all(len(node.ahead[key]) == 2 for key in keys)
    assert not set(second.values()) & {node.ahead[key][1].proc.popen.pid for key in keys}


def _descendant_running(root: int, module: str) -> int:
    """The first Python process under `root` (root included) running `module` (-m)."""
    from pkb_ray.engine.judge.freezer import children

    todo = [root]
    while todo:
        pid = todo.pop(0)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            # bwrap's own command line names the module too, as an argument
            if os.path.basename(argv[0]).startswith(b"python") and module.encode() in argv:
                return pid
        except OSError:
            pass
        todo.extend(children(pid))
    raise AssertionError(f"no process runs {module} under {root}")


def test_bits_the_kernel_never_reads_do_not_pass_the_filter(run_eval):
    """socket()'s family and a signal number are C ints: the filter compares their low 32 bits,
    as the kernel reads them (with plain equality 0x1_00000002 opened an AF_INET socket)."""
    res = run_eval(ADVERSARIAL / "opens_socket_high_bits.py")
    assert res.failure == F.RUNTIME_ERROR, (res.failure, res.message)
    for refusal in ("AF_INET: EACCES", "AF_INET6: EACCES", "SIGCONT: EACCES"):
        assert refusal in res.message, res.message


def test_a_phase_past_half_its_limit_ends_with_what_it_has(run_eval):
    """On a machine so loaded that samples take seconds (four evaluations on a 2-core
    machine), the minimum of samples did not fit the phase's limit and an honest candidate
    timed out. Past half the limit the phase ends, with at least 5 samples."""
    import dataclasses

    from .conftest import FAST_TIMEOUTS, FAST_TIMING

    res = run_eval(CANDIDATES / "store_exchange.py",
                   timing=dataclasses.replace(FAST_TIMING, min_calls=400, max_calls=1000, target_rel_ci=1e-6),
                   timeouts=dataclasses.replace(FAST_TIMEOUTS, timing_s=1.0))
    assert res.correct, (res.failure, res.message)
    assert res.timing is not None and res.timing.stopped == "late", res.timing
    assert res.timing.samples >= 5, res.timing


def _held(feature: str) -> bool:
    from pkb_ray.engine.launch import bounds

    return bounds.run_group().group.has(feature)


def _nothing_left_behind() -> None:
    """Once the last evaluation's sandboxes are reaped (in the background, SandboxProcess.
    cleanup_later): no process outside the judges and the spares, no sandbox group and no
    sandbox directory but the spares'."""
    import importlib

    from pkb_ray.engine.launch import bounds, run_root

    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    (node,) = ev.LOCAL.nodes()
    judges = {j.popen.pid for j in node.judges}
    spares = {sb.proc.id: sb.proc.popen.pid for sb in node.sandboxes_ahead()}

    def named(pid: int) -> str | None:
        """A process with its command line (which one was left says whose reaping was slow);
        None once it has gone: one that ended between the listing and the read is not left."""
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            return f"process {pid} ({line[:160]})"
        except OSError:
            return None

    def left() -> list[str]:
        out = [n for p in _children(os.getpid()) if p not in judges and p not in spares.values()
               if (n := named(p)) is not None]
        for path in bounds.run_group().group.paths:
            out += [f"group {path}/{d}" for d in os.listdir(path) if d.startswith("pkb_sbx_") and d not in spares]
        out += [f"directory {d}" for d in os.listdir(run_root()) if d.startswith("pkb_sbx_") and d not in spares]
        return out

    # The reaping threads first (SandboxProcess.cleanup_later): their chmod and rm are this
    # process's children while they run. On the loaded 2-core CI machine the fork bomb's
    # check failed in two full runs on one such process, the last time one that had ended
    # by the time its command line was read. Slow reaping is not a leak; what is still
    # there once every reaper has finished is.
    end = time.monotonic() + 120
    for t in [t for t in threading.enumerate() if t.name.startswith("pkb-cleanup-")]:
        t.join(max(0.0, end - time.monotonic()))
    end = time.monotonic() + 30
    while left() and time.monotonic() < end:
        time.sleep(0.2)
    assert not left(), left()


@pytest.mark.parametrize("name, bound, env", [
    ("fork_storm", "pids.max", {}),
    ("fork_bomb", "pids.max", {"PKB_SANDBOX_PIDS": "256"}),
    ("memory_hog", "memory", {"PKB_SANDBOX_MEMORY_MB": "1024"}),
])
def test_a_candidate_past_its_bound_fails_alone(run_eval, monkeypatch, name, bound, env):
    """Past a bound of its sandbox's group: resource_limit naming the bound, never
    harness_error; the honest exchange right after on the same judges is correct, timed and
    stopped as usual, and nothing of the attack is left (processes, groups, directories)
    to weigh on it. Its speedup is not compared: on the shared 2-core machine the honest
    exchange alone read 0.007 to 18.8 at load 10-30. The bomb and the hog run with small
    bounds, and only where a group holds them."""
    feature = "pids" if bound == "pids.max" else "memory"
    if not _held(feature):
        pytest.skip(f"no cgroup holds {feature} here (needs root and a writable hierarchy)")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    res = run_eval(ADVERSARIAL / f"{name}.py")
    assert res.failure == F.RESOURCE_LIMIT and bound in res.message, (res.failure, res.message, res.log[-2000:])
    assert "bounds: processes: pids.max" in res.sandbox, res.sandbox
    _not_correct_and_fast(res)
    for k in env:
        monkeypatch.delenv(k)
    after = run_eval(CANDIDATES / "store_exchange.py")
    assert after.correct, (after.failure, after.message)
    assert not any(f.endswith("_not_frozen") for f in after.flags), after.flags
    assert after.evidence["seconds"]["timing.stopped_cpu.candidate"] < 0.05, after.evidence
    figures_or_skip(after)
    assert after.speedup is not None and after.timing is not None and not after.timing.unmeasurable, after.message
    _nothing_left_behind()


def test_a_spinner_that_reclones_itself_is_frozen_with_its_rank(run_eval):
    """Re-cloned every 0.3 ms with CLONE_PARENT under a parent that ignores SIGCHLD: found by
    no walk and charged to no process, it spun through the reference's halves with
    `stopped_cpu` 0.0 s. Born in its rank's group, it is frozen with it."""
    if not (_held("freezer") and _held("cpu")):
        pytest.skip("no cgroup freezer here (needs root and a writable hierarchy)")
    honest = [run_eval(CANDIDATES / "store_exchange.py") for _ in range(2)]
    res = run_eval(ADVERSARIAL / "reclones_spinner.py")
    assert res.correct and all(h.correct for h in honest), (res.failure, res.message)
    assert "freezing: cgroup" in res.sandbox, res.sandbox
    figures_or_skip(*honest)
    # Its reaped generations' CPU is in no process's count: the judges' load meter may take
    # it for another process's, and then it gets no figure at all, which gains it nothing.
    if res.speedup is not None:
        assert res.speedup < 1.5 * max(h.speedup for h in honest), (res.speedup, [h.speedup for h in honest])
    else:
        assert "loaded_host" in res.flags, (res.flags, res.message)
    assert res.evidence["seconds"]["timing.stopped_cpu.candidate"] < 0.05, res.evidence
    _nothing_left_behind()
