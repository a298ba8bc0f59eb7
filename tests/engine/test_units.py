"""Static check, correctness verdicts, environment allow-list, cache keys (no processes)."""

from __future__ import annotations

import dataclasses

import math

import pytest
import torch

from pkb_ray.engine import static_check
from pkb_ray.engine.judge.comparator import compare
from pkb_ray.engine.env import FORCED, is_secret, rank_env, scrub_secrets
from pkb_ray.engine.node.timing_stats import (BETWEEN_EVALUATIONS_SD, LAUNCH_SD_US, between_sd, speedup_interval,
                                              unwidened_bounds)
from pkb_ray.engine.protocol.timing import rel_ci_of_median
from pkb_ray.records import FailureClass

from .conftest import ADVERSARIAL


def test_static_flags():
    src = """
import time, threading
import torch
import torch.distributed as dist
time.perf_counter = lambda: 0.0
torch.cuda.synchronize = lambda *a: None
s = torch.cuda.Stream()
def solution(x):
    try:
        return x
    except:
        pass
"""
    r = static_check.check(src)
    assert r.parse_error is None and not r.forbidden
    for flag in ("patches_timer", "spawns_threads_or_processes", "side_stream", "swallows_exceptions",
                 "returns_input"):
        assert flag in r.flags, (flag, r.flags)


def test_static_parse_error_and_harness_import():
    r = static_check.check((ADVERSARIAL / "parse_error.py").read_text())
    assert r.parse_error and "line" in r.parse_error
    assert static_check.check("def f(x):\n    return x\n").parse_error  # no solution
    r = static_check.check("from pkb_ray.engine.worker import guard\ndef solution(x):\n    return x\n")
    assert r.forbidden


def test_static_clean_candidate_has_no_flags():
    src = "import torch\n\ndef solution(x):\n    y = x * 2\n    return y\n"
    assert static_check.check(src).flags == []


def test_compare_verdicts():
    r = torch.randn(100)
    assert compare(r.clone(), r, 1e-5, 1e-5).ok
    v = compare(r + 1, r, 1e-5, 1e-5)
    assert v.failure == FailureClass.INCORRECT and math.isclose(v.max_abs_error, 1.0, rel_tol=1e-6)
    bad = r.clone()
    bad[3] = float("inf")
    assert compare(bad, r, 1e-5, 1e-5).failure == FailureClass.NAN
    for out in (None, "x", r.double(), r[:50], (r, r), r.view(10, 10), [1.0] * 100):
        assert compare(out, r, 1e-5, 1e-5).failure == FailureClass.INCORRECT, out

    class Liar(torch.Tensor):
        pass

    assert compare(r.clone().as_subclass(Liar), r, 1e-5, 1e-5).failure == FailureClass.INCORRECT
    assert compare((r.clone(), r.clone()), (r, r), 0, 0).ok


def test_env_allow_list():
    base = {"PATH": "/bin", "OPENAI_API_KEY": "sk", "HF_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "a",
            "MLFLOW_TRACKING_URI": "u", "NCCL_DEBUG": "INFO", "TORCH_HUB_TOKEN": "t",
            "RANDOM_THING": "x", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_NVLS_ENABLE": "1"}
    env = rank_env(base)
    assert env["PATH"] == "/bin" and env["NCCL_DEBUG"] == "INFO" and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    for k in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "MLFLOW_TRACKING_URI",
              "TORCH_HUB_TOKEN", "RANDOM_THING"):
        assert k not in env
    for k, v in FORCED.items():
        assert env[k] == v
    assert is_secret("ANTHROPIC_API_KEY") and not is_secret("PATH")
    d = dict(base)
    removed = scrub_secrets(d)
    assert "OPENAI_API_KEY" in removed and "PATH" in d and "OPENAI_API_KEY" not in d


def test_the_spread_between_evaluations_widens_the_interval_about_the_same_point():
    ref = [1.0 + 0.02 * ((7 * i) % 11) for i in range(60)]
    cand = [1.0 + 0.02 * ((5 * i) % 13) for i in range(60)]
    point, lo, hi = speedup_interval(ref, cand)
    sd = BETWEEN_EVALUATIONS_SD["cpu"]
    wpoint, wlo, whi = speedup_interval(ref, cand, between_sd=sd)
    assert wpoint == point and wlo < lo <= point <= hi < whi
    # In log space each side grows in quadrature by 1.96 x the spread, no more.
    assert math.log(point / wlo) == pytest.approx(math.hypot(math.log(point / lo), 1.959964 * sd), rel=1e-4)
    assert math.log(whi / point) == pytest.approx(math.hypot(math.log(hi / point), 1.959964 * sd), rel=1e-4)
    # Identical samples: no bootstrap spread, only the spread between evaluations.
    p, a, b = speedup_interval([1.0] * 10, [1.0] * 10, between_sd=0.1)
    assert p == 1.0 and a == pytest.approx(math.exp(-0.1959964), rel=1e-4) and b == pytest.approx(1 / a, rel=1e-6)
    # A result records its spread: a fit undoes the widening (scripts/between_evaluations.py).
    assert unwidened_bounds(wpoint, wlo, whi, sd) == pytest.approx((lo, hi), rel=1e-9)
    assert unwidened_bounds(p, a, b, 0.1) == pytest.approx((1.0, 1.0), abs=1e-6)


def test_the_cuda_spread_between_evaluations_is_the_one_its_recorded_measurement_gives(tmp_path):
    """BETWEEN_EVALUATIONS_SD["cuda"] says it was set by scripts/between_evaluations.py from
    recorded self-timings: the script, run on those files, must give it back."""
    import json
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    fit = json.loads((root / "benchmarks/results/ws1_0.4.4_2026-11-26/between_evaluations_fit_0.4.5.json").read_text())
    script = runpy.run_path(str(root / "scripts/between_evaluations.py"))
    argv = [str(root / p) for p in fit["results"]] + ["--samples"] + [str(root / p) for p in fit["samples"]]
    assert script["main"](argv + ["--out", str(tmp_path), "--tag", "_again"]) == 0
    again = json.loads((tmp_path / "between_evaluations_again.json").read_text())
    assert again["chosen"] == fit["chosen"] == BETWEEN_EVALUATIONS_SD["cuda"]
    n = again["evaluations"]
    assert n == 99 and again["grid"][0]["holding"] < 0.95 * n <= next(
        g["holding"] for g in again["grid"] if g["b"] == BETWEEN_EVALUATIONS_SD["cuda"])


def test_short_calls_widen_the_interval_by_a_time_per_call():
    """The per-call part of the spread (LAUNCH_SD_US) weighs on calls of a few microseconds
    and vanishes on long ones; cpu keeps its one figure."""
    base = between_sd("cuda", 2)
    assert between_sd("cuda", 2, 0.5, 0.5) == pytest.approx(base, rel=0.005)  # 500 us calls: 0.2% wider
    short = between_sd("cuda", 2, 0.006, 0.012)  # the allreduce expert at 1024x1024, world size 1
    us = LAUNCH_SD_US["cuda"]
    assert short == pytest.approx(math.sqrt(base ** 2 + (us / 6) ** 2 + (us / 12) ** 2))
    assert short > 4 * base
    assert between_sd("cuda", 2, None, 0.012) == base  # no figure per call: the device's alone
    assert between_sd("cpu", 1, 0.006, 0.012) == BETWEEN_EVALUATIONS_SD["cpu"]


def test_the_per_call_spread_is_the_one_its_recorded_repeats_give(tmp_path):
    """LAUNCH_SD_US["cuda"] says it was set by scripts/between_repeats.py from recorded
    bench_eval repeats: the script, run on those files, must give it back, and a smaller value
    must fail one of its counts (else the term would be wider than the records ask)."""
    import json
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    fit = json.loads((root / "benchmarks/results/s19_2026-11-29/between_repeats_fit.json").read_text())
    script = runpy.run_path(str(root / "scripts/between_repeats.py"))
    argv = [str(root / p) for p in fit["results"]] + ["--hold-out"] + [str(root / p) for p in fit["hold_out"]]
    assert script["main"](argv + ["--out", str(tmp_path), "--tag", "_again"]) == 0
    again = json.loads((tmp_path / "between_repeats_again.json").read_text())
    assert again["chosen"] == fit["chosen"] == LAUNCH_SD_US["cuda"]
    below = [g for g in again["grid"] if g["per_call_us"] < again["chosen"]]
    assert below and all(min(v for k, v in g.items() if k != "per_call_us") < 0.95 for g in below)


def test_rel_ci_of_median():
    assert rel_ci_of_median([1.0] * 20) == 0.0
    assert rel_ci_of_median([1.0, 2.0]) == math.inf
    assert 0 < rel_ci_of_median([1.0 + 0.01 * (i % 5) for i in range(50)]) < 0.05


def test_static_forbids_native_nccl():
    src = 'cpp = "#include <nccl.h>\\nvoid f(){ ncclAllReduce(0,0,0,0,0,0,0); }"\ndef solution(x):\n    return x\n'
    assert static_check.check(src).forbidden
    clean = '"""Replaces NCCL all-reduce with symmetric memory."""\ndef solution(x):\n    return x * 1\n'
    assert not static_check.check(clean).forbidden


def _untemper(y: int) -> int:
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    for _ in range(7):
        y = y ^ ((y << 7) & 0x9D2C5680)
    for _ in range(3):
        y = y ^ (y >> 11)
    return y & 0xFFFFFFFF


def _predict_next_mt(outputs: list[int]) -> int:
    """The Mersenne Twister's next 32-bit output, cloned from its last 624: what a candidate
    that saw enough of a generator's output could do to predict the next checked call."""
    import random

    clone = random.Random()
    clone.setstate((3, tuple(_untemper(o) for o in outputs[-624:]) + (624,), None))
    return clone.getrandbits(32)


def test_secrets_do_not_reveal_their_state():
    """624 outputs of a Mersenne Twister give its state and every next output (the old
    Secrets was one); the keyed stream's next output does not follow from its outputs."""
    import random

    from pkb_ray.engine.judge.inputs import Secrets

    mt = random.Random(7)
    seen = [mt.getrandbits(32) for _ in range(624)]
    assert _predict_next_mt(seen) == mt.getrandbits(32)  # the attack works on a plain generator

    for rng in (Secrets(7).check_rng(), Secrets(7)._inputs):
        seen = [rng.getrandbits(32) for _ in range(624)]
        assert _predict_next_mt(seen) != rng.getrandbits(32)
        try:
            rng.getstate()
            raise AssertionError("a keyed stream handed out its state")
        except NotImplementedError:
            pass
    a, b, c = Secrets(7), Secrets(7), Secrets(8)
    seeds = [a.input_seed() for _ in range(20)]
    assert seeds == [b.input_seed() for _ in range(20)]  # every judge draws the same inputs
    assert seeds != [c.input_seed() for _ in range(20)] and all(0 <= s < 1 << 31 for s in seeds)
    assert len(set(seeds)) == 20
    picks = [a.check_rng().randrange(10) for _ in range(2000)]
    assert all(150 < picks.count(i) < 250 for i in range(10)), "checked calls are chosen uniformly"


def test_floor_is_fitted_through_the_least_windows():
    """The floor is what the harness costs at least: one slow calibration run at a batch
    size does not raise it (a raised floor left figures below the hardware's least time)."""
    from pkb_ray.engine.judge.session import fit_floor

    points = [(k, 0.2 + 0.05 * k + extra) for k in (1, 4, 16) for extra in (0.0, 0.001, 0.3, 0.4, 0.002)]
    fixed, per_call = fit_floor(points)
    assert abs(fixed - 0.201) < 0.01 and abs(per_call - 0.05) < 0.002
    assert fit_floor([(1, 1.0), (1, 3.0)]) == (1.0, 0.0)
    assert fit_floor([(1, 0.5), (64, 0.1), (16, 0.2)])[1] == 0.0  # never a negative slope


def test_cpu_plausibility_floor():
    """CPU ranks get a physics floor too: the bytes a rank must move at every core's measured
    copy rate. A correct result below 0.9 of it is implausible, kept with its evidence; the
    same result above it is left alone."""
    from pkb_ray.engine import hardware, roofline
    from pkb_ray.engine.node import verdict
    from pkb_ray.problems.spec import RooflineCounts
    from pkb_ray.records import EvalResult, FailureClass

    gbps = hardware.host_copy_gbps()
    assert 0.1 < gbps < 1000, gbps  # a real measurement of this host, in GB/s
    counts = RooflineCounts(nvlink_bytes_per_rank=64e6, flops_per_rank=1e6, hbm_bytes_per_rank=128e6)
    floor = roofline.host_roofline_ms(counts, gbps, 2)
    assert floor == pytest.approx(128e6 / (2 * gbps * 1e9 * 2) * 1e3)
    assert roofline.host_roofline_ms(None, gbps, 2) is None

    def floor_of(**fields) -> EvalResult:
        """The fields of a correct result, as the verdict gathers them, through the floor."""
        verdict.physics_floor(fields)
        return EvalResult(**fields)

    fast = floor_of(correct=True, candidate_ms=0.5 * floor, roofline_ms=floor, device="cpu")
    assert fast.failure == FailureClass.IMPLAUSIBLE and not fast.correct
    assert fast.evidence["roofline_ms"] == floor and "implausible" in fast.message
    honest = floor_of(correct=True, candidate_ms=3 * floor, roofline_ms=floor, device="cpu")
    assert honest.correct and honest.roofline_fraction == pytest.approx(1 / 3)
    # A timed CPU result is judged on the whole time per call the judge saw: its figure less
    # the floor can be a sliver for honest code (noise), the whole time cannot.
    from pkb_ray.records import TimingEvidence

    sliver = floor_of(correct=True, candidate_ms=0.01 * floor, roofline_ms=floor, device="cpu",
                        timing=TimingEvidence(calls_per_sample=4, floor_ms=8 * floor))
    assert sliver.correct and sliver.roofline_fraction == pytest.approx(1 / 2.01)
    # On cuda the figure less the floor is judged, but not when the harness found the
    # reference too short to time (an honest reference read 1.78 of its roofline so): then
    # the whole time. A candidate alone too short to time is judged strictly.
    cuda = dict(correct=True, candidate_ms=0.5 * floor, roofline_ms=floor, device="cuda")
    measured = floor_of(**cuda, timing=TimingEvidence(calls_per_sample=4, floor_ms=8 * floor))
    assert measured.failure == FailureClass.IMPLAUSIBLE
    ref_short = "the reference's 4 call(s) per sample took 0.01 ms beyond the 1 ms ...: too short to time"
    unmeasurable = floor_of(**cuda, timing=TimingEvidence(calls_per_sample=4, floor_ms=8 * floor,
                                                            unmeasurable=ref_short,
                                                            unmeasurable_kind="too_short_reference"))
    assert unmeasurable.correct and unmeasurable.roofline_fraction == pytest.approx(1 / 2.5)
    cand_short = floor_of(**cuda, timing=TimingEvidence(calls_per_sample=4, floor_ms=8 * floor,
                                                          unmeasurable=ref_short.replace("reference", "candidate"),
                                                          unmeasurable_kind="too_short_candidate"))
    assert cand_short.failure == FailureClass.IMPLAUSIBLE
    # ... and the whole time still below the floor is implausible.
    gross = floor_of(correct=True, candidate_ms=0.1 * floor, roofline_ms=floor, device="cuda",
                       timing=TimingEvidence(calls_per_sample=4, floor_ms=0.4 * floor, unmeasurable=ref_short,
                                             unmeasurable_kind="too_short_reference"))
    assert gross.failure == FailureClass.IMPLAUSIBLE
    # No figure of the phase can be weighed where a half was timed partly before its gate
    # opened (it waits on the host), or there was no gate, or the host was loaded: a
    # reference against itself read "implausible" so (gather_to_root, 4 x H200, ws 4).
    for kind in ("waits_on_host", "no_gate", "loaded"):
        none = floor_of(**cuda, timing=TimingEvidence(calls_per_sample=4, floor_ms=0.1 * floor,
                                                        unmeasurable="...", unmeasurable_kind=kind))
        assert none.correct and none.failure is None, kind


def test_a_figure_without_an_interval_is_not_published():
    """Two samples (a phase that ended at max_time right after a shrink threw the rest away)
    give no bootstrap interval: the result is correct, unmeasurable, with no speedup; ten
    give a speedup with an interval (issue 37: every correct timed result has one)."""
    from pkb_ray.engine.node import verdict
    from pkb_ray.engine.protocol.timing import TimingSamples

    def timed(n: int) -> dict:
        ref = [10.0 + 0.1 * (i % 3) for i in range(n)]
        cand = [9.5 + 0.1 * (i % 4) for i in range(n)]
        samples = TimingSamples(reference_window_ms=ref, candidate_window_ms=cand, reference_report_ms=ref,
                                candidate_report_ms=cand, floor_ms=0.1, floor_curve_ms=[], calls_per_sample=4,
                                gated=True, stopped="max_time", problem_calls_per_sample=4)
        r = {"flags": [], "world_size": 2, "checked_timed_calls": 3}
        r["message"] = verdict._timing(r, samples, "cuda")
        return r

    few = timed(2)
    assert "speedup" not in few and "unmeasurable" in few["flags"]
    assert few["timing"].unmeasurable_kind == "too_few_samples" and "no speedup: 2 sample(s)" in few["message"]
    enough = timed(10)
    assert "unmeasurable" not in enough["flags"]
    assert enough["speedup_ci_low"] < enough["speedup"] < enough["speedup_ci_high"]


def test_a_figure_whose_workers_drew_different_paces_says_so():
    """Each worker process draws its CUDA pace (s18: 1.84-1.87 or 1.94-2.01 us a kernel on one
    H200); a rank whose two workers differ beyond paces.TOLERANCE flags the figure."""
    from pkb_ray.engine.node import verdict
    from pkb_ray.engine.protocol.timing import TimingSamples

    paced = TimingSamples(reference_window_ms=[10.0] * 10, candidate_window_ms=[9.0] * 10,
                          reference_report_ms=[10.0] * 10, candidate_report_ms=[9.0] * 10, floor_ms=0.1,
                          floor_curve_ms=[], calls_per_sample=4, gated=True, stopped="stable",
                          problem_calls_per_sample=4, context_pace_us=[[1.85, 1.86], [1.85, 1.99]])
    r = {"flags": [], "world_size": 2, "checked_timed_calls": 3}
    verdict._timing(r, paced, "cuda")
    assert "worker_paces_differ" in r["flags"] and r["timing"].context_pace_us == [[1.85, 1.86], [1.85, 1.99]]
    paced = dataclasses.replace(paced, context_pace_us=[[1.85, 1.86], [1.99, 1.98]])  # each rank agrees
    r = {"flags": [], "world_size": 2, "checked_timed_calls": 3}
    verdict._timing(r, paced, "cuda")
    assert "worker_paces_differ" not in r["flags"]


def test_the_calibration_stand_in_returns_outputs_of_their_own_for_each_call_on_cuda():
    """The floor's empty calls copy what the stand-in returns: one set copied k times reads
    from cache after the first copy, which real calls' outputs do not (worker/run.stand_in).
    On cuda each call's outputs are rows of one zeroed block; on cpu one set, made once."""
    import torch

    from pkb_ray.engine.worker.run import stand_in

    calls = [{"outs": [{"shape": [4, 8], "dtype": "bfloat16"}, {"shape": [3], "dtype": "int64"}]}] * 3
    cpu = stand_in(calls, "cpu")
    assert len({t.data_ptr() for _ in calls for t in cpu()}) == 2
    if not torch.cuda.is_available():
        pytest.skip("the per-call outputs are made on cuda only (no GPU here); cpu checked above")
    fn = stand_in(calls, "cuda")
    outs = [fn() for _ in calls]
    assert len({t.data_ptr() for out in outs for t in out}) == 6
    for a, b in outs:
        assert a.shape == (4, 8) and a.dtype == torch.bfloat16 and not a.any()
        assert b.shape == (3,) and b.dtype == torch.int64 and not b.any()
