"""The timing mode is the problem's (kept by the node), and the host's load is seen: real
files, real processes, real evaluations on gloo ranks."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from pkb_ray.config.schema import TimingConfig
from pkb_ray.engine.node import timing_modes
from pkb_ray.engine.protocol.timing import TimingConditions, TimingMode
from pkb_ray.engine.judge.timing import conditions, expiries
from pkb_ray.engine.judge.timing.expiries import HeldExpiries

from pkb_ray.engine import evaluate

from .conftest import CANDIDATES, FAST_TIMING, LOADER, request_for


def test_the_first_mode_kept_wins_and_a_later_one_changes_nothing(tmp_path):
    cfg = TimingConfig()
    first = timing_modes.remember_mode(tmp_path, "p-ws2-bench-abc", cfg, TimingMode(True, 64), "test")
    again = timing_modes.remember_mode(tmp_path, "p-ws2-bench-abc", cfg, TimingMode(False, 1), "test")
    assert first == again == TimingMode(True, 64)
    assert timing_modes.load_mode(tmp_path, "p-ws2-bench-abc", cfg) == TimingMode(True, 64)
    # Other timing settings, another problem: no mode yet.
    assert timing_modes.load_mode(tmp_path, "p-ws2-bench-abc", TimingConfig(batch_ms=2.0)) is None
    assert timing_modes.load_mode(tmp_path, "q-ws2-bench-abc", cfg) is None


def test_threads_racing_to_keep_a_mode_all_see_one(tmp_path):
    cfg, seen = TimingConfig(), []

    def keep(i: int) -> None:
        seen.append(timing_modes.remember_mode(tmp_path, "race", cfg, TimingMode(i % 2 == 0, 2 ** (i % 7)), "t"))

    threads = [threading.Thread(target=keep, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and timing_modes.load_mode(tmp_path, "race", cfg) == seen[0]


@pytest.mark.parametrize("text", ["not json", json.dumps({"held": 1, "calls_per_sample": 4}),
                                  json.dumps({"held": True, "calls_per_sample": 0}),
                                  json.dumps({"held": True, "calls_per_sample": True}), json.dumps([1, 2])])
def test_a_mode_file_that_is_not_one_is_decided_again(tmp_path, text):
    cfg = TimingConfig()
    path = timing_modes.mode_path(tmp_path, "k", cfg)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert timing_modes.load_mode(tmp_path, "k", cfg) is None


def test_the_cpu_time_of_a_process_tree_counts_its_reaped_children():
    # A child spins 0.6 s of CPU under a shell and ends; the shell has reaped it (its CPU is
    # in the shell's cutime) and sleeps: the tree still holds those 0.6 s.
    code = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.6: pass\n"
    sh = subprocess.Popen(["/bin/sh", "-c", f"{sys.executable} -c '{code}'; sleep 2"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and conditions.tree_cpu_s([sh.pid]) < 0.55:
            time.sleep(0.05)
        assert conditions.tree_cpu_s([sh.pid]) >= 0.55
    finally:
        sh.kill()
        sh.wait()
    assert conditions.tree_cpu_s([sh.pid]) == 0.0  # a tree that is gone holds nothing


def test_load_beyond_the_limit_is_named_and_below_it_is_not():
    quiet = TimingConditions(cpu_pressure=0.05, steal=0.0, foreign=0.03, cpus=2)
    busy = TimingConditions(cpu_pressure=0.9, steal=0.0, foreign=0.55, cpus=2)
    stolen = TimingConditions(cpu_pressure=0.0, steal=0.2, foreign=0.0, cpus=2)
    assert conditions.loaded(quiet, "cpu", 0.2) == "" and conditions.loaded(quiet, "cuda", 0.2) == ""
    assert "other processes used 55%" in conditions.loaded(busy, "cpu", 0.2)
    assert conditions.loaded(busy, "cpu", 1.0) == ""  # the user accepted any load
    # cuda: evidence only (pressure and steal on a quiet 4-GPU node reached 0.56 and 0.07).
    assert conditions.loaded(busy, "cuda", 0.2) == "" and conditions.loaded(stolen, "cuda", 0.2) == ""
    assert "hypervisor took 20%" in conditions.loaded(stolen, "cpu", 0.2)
    # A kernel without PSI or /proc/stat: nothing known, nothing refused.
    assert conditions.loaded(TimingConditions(), "cpu", 0.2) == ""


def _spinners(n: int, duty: float) -> list[subprocess.Popen]:
    """`n` processes, each spinning `duty` of every 100 ms."""
    code = (f"import time\nwhile True:\n    end = time.monotonic() + {0.1 * duty}\n"
            f"    while time.monotonic() < end: pass\n    time.sleep({0.1 * (1 - duty)})\n")
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def test_a_host_loaded_by_another_process_gets_no_figure(run_eval):
    # Processes spinning on the cores the ranks use: whichever rank they land beside is
    # slowed for the whole evaluation, and the figure would be that draw. Half of each 100 ms,
    # half the host's CPU: far past max_foreign_cpu. Spinning all the time, they left the
    # workers (SCHED_IDLE on cpu) so little that the evaluation took 67 s in most runs and
    # once ran out its 258 s in the reference's calibration.
    spin = _spinners(os.cpu_count() or 2, duty=0.5)
    try:
        # one trial: the timing phase under load is the point, and each trial crawls there too
        res = run_eval(CANDIDATES / "store_exchange.py", trials=1,
                       timing=dataclasses.replace(FAST_TIMING, max_foreign_cpu=0.2))
    finally:
        for p in spin:
            p.kill()
            p.wait()
    assert res.correct, (res.failure, res.message)
    assert {"loaded_host", "unmeasurable"} <= set(res.flags) and res.speedup is None, (res.flags, res.message)
    assert res.timing is not None and res.timing.foreign_cpu is not None and res.timing.foreign_cpu > 0.2
    assert "other processes used" in res.message


def test_the_mode_is_kept_by_the_node_and_reused(tmp_path):
    # Any load accepted: this is about the mode, not the figure.
    cache = str(tmp_path / "cache")
    timing = dataclasses.replace(FAST_TIMING, max_foreign_cpu=1.0)
    first, second = (evaluate(request_for(CANDIDATES / "store_exchange.py", cache, timing=timing), load_problem=LOADER)
                     for _ in range(2))
    assert first.correct and second.correct, (first.message, second.message)
    assert first.timing.mode_source == "calibrated" and second.timing.mode_source == "cached"
    assert first.timing.calls_per_sample == second.timing.calls_per_sample
    assert first.timing.gated is second.timing.gated is False  # cpu: no launch gate
    kept = list((tmp_path / "cache" / "reference").glob("*/mode-*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["calls_per_sample"] == first.timing.calls_per_sample
    # Every sample's windows and reports are kept, with when it ended (to redo the statistics,
    # or line the samples up with a log of the machine: scripts/device/machine_log.py).
    for res in (first, second):
        ev = res.timing
        assert len(ev.windows_ms) == ev.samples == len(ev.sample_at_s) and {len(w) for w in ev.windows_ms} == {4}
        assert ev.sample_at_s == sorted(ev.sample_at_s) and ev.sample_at_s[-1] - ev.sample_at_s[0] < 60
        assert ev.empty_windows_ms == [] and ev.context_pace_us == []  # cpu: no empty runs, no CUDA pace
    assert first.timing.calls_per_sample > 1, "the batch cap below would prove nothing"
    capped = evaluate(request_for(CANDIDATES / "store_exchange.py", str(tmp_path / "capped"),
                                  timing=dataclasses.replace(timing, max_batch_calls=1)), load_problem=LOADER)
    assert capped.correct and capped.timing.calls_per_sample == 1, capped.message


def _feed(policy, samples):
    return [policy.see(r, c) for r, c in samples]


def test_one_expiry_is_a_first_launch_and_changes_nothing():
    p = HeldExpiries(16)
    assert _feed(p, [(False, False), (False, True), (False, False), (True, False), (False, False)]) == \
        ["keep", "drop", "keep", "drop", "keep"]
    assert p.k == 16 and p.samples == 2 and (p.reference, p.candidate) == (1, 1)


def test_calls_that_fill_the_launch_queue_halve_the_batch_until_it_fits():
    # Expires at 16 and 8 calls per sample, holds at 4: the batch halves twice, for good.
    p = HeldExpiries(16)
    acts = _feed(p, [(True, True)] * 4 + [(False, False)] * 3)
    assert acts == ["drop", "shrink", "drop", "shrink", "keep", "keep", "keep"] and p.k == 4


def test_a_half_that_waits_on_the_host_gets_no_figure_and_is_named():
    p = HeldExpiries(4)
    acts = _feed(p, [(False, True)] * 6)
    assert acts == ["drop", "shrink", "drop", "shrink", "drop", "give_up"] and p.k == 1
    assert p.why().startswith("the candidate's calls wait on the GPU from the host")
    q = HeldExpiries(1)
    assert _feed(q, [(True, False)] * 2) == ["drop", "give_up"]
    assert q.why().startswith("the reference's calls waited")


def test_expiries_every_other_sample_end_at_a_cap():
    p = HeldExpiries(64)
    acts = _feed(p, [(False, True), (False, False)] * expiries.MOST)
    assert acts[-2] == "give_up" and acts.count("give_up") == 1 and p.samples == expiries.MOST
    assert p.k == 64  # never two in a row: the batch never halved
