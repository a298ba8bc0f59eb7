"""Reference and candidate timed in alternation, on the same fresh inputs, by the same rules.

One pair: the judges make k fresh input sets from the secret; the reference runs them back
to back behind the judges' gate (CUDA events on the judges' streams); L2 is scrubbed; the
worker runs the candidate on the same contents behind a gate only the judges open, and
answers. Drift (clocks, temperature, neighbours) hits both halves of a pair alike, so it
cancels in their ratio (the node's interval is a paired bootstrap).

Every timed call sees contents made for it alone; every call's inputs are checked bit for
bit afterwards; a secret sample of calls (at least 5, spread over the phase) has its
outputs compared with the reference's. The worker reports its own event times; the judge
bounds them with its clock: from the gate's opening to the answer, minus what a run of no
work costs (calibrated before any candidate code existed in the worker). A reported time
above what the judge saw pass is `implausible`; one far below it is replaced by the
judge's figure (flag `timed_by_judge_clock`), so a worker can only ever make itself slower.

Callables that wait on the GPU from the host cannot be held behind a closed gate; the gate
then only lines the ranks up and the calls launch after it (flag `timed_ungated`).
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from typing import Any

import torch

from pkb_ray.engine import timing_stats
from pkb_ray.engine.judge import inputs as inp
from pkb_ray.engine.judge.link import WorkerFault
from pkb_ray.records import FailureClass

GAMMA = 0.8
"""Worker reports whose median is below this fraction of the judge's clock are not believed."""
EPS_MS = 0.05
"""Slack for clock granularity when checking that a report fits in the time that passed."""
MIN_CHECKED = 5
PROBES = 3


class Interleaved:
    def __init__(self, session: Any) -> None:
        from pkb_ray.engine.judge.session import _Stop

        self.s = session
        self._Stop = _Stop
        self.ctx = session.ctx
        self.cfg = session.cfg
        self.ref_hold = self.ctx.ref_gate is not None and self.cfg.gate and self.ctx.cuda
        self.cand_hold = session.cand_gate and session.job.gate_candidate
        self.k = 1
        self.rng = session.secrets.check_rng()
        self.t0 = time.monotonic()
        self.deadline = self.t0 + session.timeouts.timing_s
        self.ref: list[float] = []
        self.cand: list[float] = []
        self.judged: list[float] = []
        """Per sample, the judge's own figure (its window minus the calibrated floor, per call)."""
        self.sum_reported = 0.0
        self.sum_judged = 0.0
        self.checked = 0
        self.impossible: list[str] = []
        self.before_open: list[float] = []
        """Per sample, the longest a rank took from its inputs to its calls being queued."""

    # ------------------------------------------------------------------ one half of a pair
    def ref_sample(self, sets: list[tuple], hold: bool) -> tuple[float, list[Any], int]:
        """The reference on `sets` back to back; (ms for all, outputs, gates expired)."""
        ctx, solution = self.ctx, self.s.problem.solution
        ctx.scrub_l2()
        if not ctx.cuda:
            t0 = time.perf_counter()
            outs = [solution(*a) for a in sets]
            return (time.perf_counter() - t0) * 1e3, outs, 0
        gate, page = ctx.ref_gate, ctx.ref_page
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        before = page.expired(ctx.rank) if page is not None else 0
        gen = 0
        if gate is not None and self.cfg.gate:
            ctx.ref_gen += 1
            gen = ctx.ref_gen
            gate.close(gen)
            if not hold:
                page.open(ctx.rank, gen)
        start.record()
        outs = [solution(*a) for a in sets]
        end.record()
        if gen and hold:
            page.open(ctx.rank, gen)
        torch.cuda.synchronize()
        expired = (page.expired(ctx.rank) - before) if page is not None else 0
        return start.elapsed_time(end), outs, expired

    def cand_sample(self, sets: list[tuple], shapes_from: list[Any], hold: bool,
                    check: tuple[int, Any] | None, n: int) -> dict:
        s = self.s
        s.layout.reset()
        placed, slots, calls = [], [], []
        for a, e in zip(sets, shapes_from):
            p, sl, c = s.call(a, e)
            placed.append(p)
            slots.append(sl)
            calls.append(c)
        r = s.run_timed(calls, hold=hold, timeout_s=max(1.0, self.deadline - time.monotonic()))
        for j, p in enumerate(placed):
            if not p.unchanged():
                s.fail(FailureClass.INCORRECT, f"timed call {n}.{j}: the candidate modified its input "
                       "tensor(s); inputs must be left as they are", trial=s.job.trials)
                return r
        if check is not None:
            j, expected = check
            self.checked += 1
            s.check_output(r["done"].outputs[j], slots[j], expected, placed[j],
                           f"output of timed call {n}.{j} (checked in secret)", s.job.trials)
        return r

    # ------------------------------------------------------------------ steps in lockstep
    def step(self, fn: Any) -> list[Any]:
        """Run fn on this judge, then gather (failure, data) from every judge."""
        s = self.s
        data = None
        try:
            data = fn()
        except WorkerFault as f:
            s.fault(f, s.job.trials)
        except self._Stop:
            raise
        except Exception:  # noqa: BLE001 - a harness bug
            tb = traceback.format_exc()
            s.fail(FailureClass.HARNESS_ERROR, f"judge error while timing: {tb.strip().splitlines()[-1][:300]}", log=tb)
        rows = self.ctx.group.gather((s.report.failure, data))
        if any(r[0] for r in rows):
            raise self._Stop()
        return [r[1] for r in rows]

    def one(self, sets: list[tuple], fresh: bool, n: int, check_j: int | None) -> dict:
        """One pair on this judge: reference then candidate, on `sets`."""
        ref_ms, outs, ref_expired = self.ref_sample([inp.clone(a) for a in sets], self.ref_hold)
        check = None
        if check_j is not None:
            # Before the worker runs: the reference is a collective, and a judge whose worker
            # fails next must already have taken part in it.
            check = (check_j, self.s.reference(sets[check_j]))
        r = self.cand_sample(sets, outs, self.cand_hold, check, n)
        # Every number another judge will use travels in the row: decisions are taken from
        # the gathered rows alone, so every judge takes the same ones (or they deadlock).
        return {"ref": ref_ms, "ref_expired": ref_expired, "reported": r["reported_ms"],
                "o": self.s.overhead(len(sets)), "fit": self.s.calls_fit,
                "t_open": r["t_open"], "t_done": r["t_done"], "t_ready": r["t_ready"],
                "open": r["open_ms"], "ready": r["ready_ms"], "expired": r["expired"],
                "started_late": r["started_late_ms"]}

    def combine(self, rows: list[dict], k: int) -> tuple[float, float, bool]:
        """(reference ms per call, candidate ms per call as the worker reported it, whether
        any gate expired); the judge's own figure for the sample is kept beside it."""
        ref = max(r["ref"] for r in rows) / k
        # The gate opens when the last judge opens its slot: every rank's window starts there
        # (perf_counter is one clock for all the node's processes).
        opened = max(r["t_open"] for r in rows)
        self.before_open.append(max(r["t_open"] - r["t_ready"] for r in rows) * 1e3)
        reported = judged = 0.0
        for rank, r in enumerate(rows):
            window = max(0.0, (r["t_done"] - opened) * 1e3)
            if r["reported"] > r["ready"] + EPS_MS:
                self.impossible.append(f"rank {rank} reported {r['reported']:.4g} ms for a run the judge "
                                       f"saw take {r['ready']:.4g} ms from inputs to answer (it says it "
                                       f"started {r['started_late']:.4g} ms after the inputs)")
            reported = max(reported, r["reported"] / k)
            judged = max(judged, max(0.0, window - r["o"]) / k)
            self.sum_reported += r["reported"]
            self.sum_judged += max(0.0, window - r["o"])
        self.judged.append(judged)
        expired = any(r["expired"] or r["ref_expired"] for r in rows)
        return ref, reported, expired

    def candidate_times(self) -> tuple[list[float], bool]:
        """The candidate's times of record: the worker's, unless across the evaluation they
        fall below GAMMA of what the judge's clock allows (the median ratio, so one noisy
        sample decides nothing); then the judge's own figures, and the flag says so."""
        ratios = [r / j for r, j in zip(self.cand, self.judged) if j > 0]
        if ratios and statistics.median(ratios) < GAMMA:
            return list(self.judged), True
        return list(self.cand), False

    # ------------------------------------------------------------------ the phase
    def run(self) -> None:
        s = self.s
        s.phase = "timing"
        t_phase = time.monotonic()
        trial_sets = s.trial_args
        # One gate mode for every rank: a gate that held one rank's calls and not another's
        # would only time out.
        if not all(self.ctx.group.gather(self.cand_hold)):
            self.cand_hold = False
        # Probe: can each side be held behind its gate, and how long is one call?
        rows = self.step(lambda: [self.one([trial_sets[i % len(trial_sets)]], False, -1, None)
                                  for i in range(PROBES)])
        ref_expired = any(p["ref_expired"] for r in rows for p in r)
        cand_expired = any(p["expired"] for r in rows for p in r)
        if ref_expired:
            self.ref_hold = False
        if cand_expired:
            self.cand_hold = False
        one_ref = statistics.median(max(r[i]["ref"] for r in rows) for i in range(PROBES))
        one_cand = statistics.median(max(max(r[i]["reported"], r[i]["open"] - r[i]["o"]) for r in rows)
                                     for i in range(PROBES))
        k = 1
        if self.cfg.batch_ms > 0:
            k = math.ceil(self.cfg.batch_ms / max(min(one_ref, one_cand), 1e-3))
        self.k = k = max(1, min(k, min(r[0]["fit"] for r in rows), 64))
        self.impossible.clear()
        self.sum_reported = self.sum_judged = 0.0
        # Warm-up by time, on the trials' inputs (nothing is measured or checked).
        n_warm = min(200, math.ceil(self.cfg.warmup_ms / max(k * max(one_ref, one_cand), 1e-3)))
        for i in range(max(1, n_warm)):
            sets = [trial_sets[(i * k + j) % len(trial_sets)] for j in range(k)]
            self.step(lambda sets=sets: self.one(sets, False, -1, None))
        self.impossible.clear()
        self.sum_reported = self.sum_judged = 0.0
        # The main loop: fresh inputs for every call.
        min_n = max(self.cfg.min_calls, MIN_CHECKED)
        span = max(1, min_n // MIN_CHECKED)
        planned = {i * span + self.rng.randrange(span) for i in range(MIN_CHECKED)}
        stopped, n, batch = "max_calls", 0, min_n
        t_main = time.monotonic()
        while True:
            for _ in range(batch):
                check_j = None
                if n in planned or (n >= min_n and self.rng.random() < 0.05):
                    check_j = self.rng.randrange(k)
                rows = self.step(lambda n=n, c=check_j: self.one([s.make() for _ in range(k)], True, n, c))
                ref, cand, expired = self.combine(rows, k)
                if expired and (self.ref_hold or self.cand_hold):
                    # A gate held a call until it timed out: those times are wrong. Go on
                    # without holding that side, and start the samples over.
                    if any(r["ref_expired"] for r in rows):
                        self.ref_hold = False
                    if any(r["expired"] for r in rows):
                        self.cand_hold = False
                    self.ref, self.cand, self.judged = [], [], []
                    self.sum_reported = self.sum_judged = 0.0
                    continue
                self.ref.append(ref)
                self.cand.append(cand)
                n += 1
            done_n = len(self.cand)
            stable = done_n >= self.cfg.min_calls and \
                timing_stats.rel_ci_of_median(self.ref) <= self.cfg.target_rel_ci and \
                timing_stats.rel_ci_of_median(self.cand) <= self.cfg.target_rel_ci
            if stable:
                stopped = "stable"
                break
            if done_n >= self.cfg.max_calls:
                stopped = "max_calls"
                break
            # Every judge must leave the loop at the same batch (the next step is a gather
            # with all of them), and their clocks started apart: the decision is agreed. A
            # judge that left alone on its own clock hung the others until the node's
            # deadline (a harness_error seen on a 2-core machine at load 10).
            if any(self.ctx.group.gather(time.monotonic() - t_main >= self.cfg.max_timing_s)):
                stopped = "max_time"
                break
            batch = max(self.cfg.min_calls, done_n // 2)
        s.report.seconds["timing"] = time.monotonic() - t_phase
        s.report.checked_timed_calls = self.checked
        cand, by_judge = self.candidate_times()
        if self.ctx.rank == 0:
            s.report.timing = {
                "ref_ms": self.ref, "cand_ms": cand, "calls_per_sample": k,
                "ref_gated": self.ref_hold, "cand_gated": self.cand_hold, "stopped": stopped,
                "timed_by_judge_clock": by_judge, "samples": len(cand),
                "reported_ms_total": self.sum_reported, "judged_ms_total": self.sum_judged,
                "overhead_ms": s.overhead_ms, "impossible": self.impossible[:10],
                "before_open_ms_median": statistics.median(self.before_open) if self.before_open else None,
            }
        if self.impossible:
            s.fail(FailureClass.IMPLAUSIBLE, "the worker reported more time than the judge saw pass: "
                   + self.impossible[0], own_fault=True)
