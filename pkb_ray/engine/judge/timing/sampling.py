"""The timing phase on one judge: reference and candidate in alternation, each in its own
worker, both timed by this judge's clock the same way.

One sample: the judges make k fresh input sets from the secret; each half (the reference
worker, then the candidate worker, or the other way round on odd samples) gets the same
contents, L2 scrubbed before it, its calls queued behind a gate only the judges open; the
judge's window runs from opening the gate to the worker's answer. Drift (clocks,
temperature, neighbours) hits both halves of a pair alike and cancels in their ratio (the
node's interval is a paired bootstrap); alternating the order cancels what going second
does to a half.

Every timed call of the candidate sees contents made for it alone; its inputs are checked
bit for bit afterwards; a secret sample of its calls (at least 5, spread over the phase)
has its outputs compared with the judges' own reference. The workers' own clocks are
reported beside the windows: evidence of a lie (node/timing_evidence.py), never a figure.
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from pkb_ray.engine.judge import inputs as inp
from pkb_ray.engine.protocol.timing import LEAST_SHARE, TimingMode, TimingSamples, rel_ci_of_median
from pkb_ray.engine.judge.link import WorkerFault
from pkb_ray.engine.judge.session import Session, TimedRun, WorkerSide
from pkb_ray.engine.judge.stop import Stop
from pkb_ray.engine.judge.timing.conditions import ConditionsMeter, loaded
from pkb_ray.engine.judge.timing.expiries import STREAK, HeldExpiries
from pkb_ray.records import FailureClass

EPS_MS = 0.05
"""Slack for clock granularity when checking that a report fits in the time that passed."""
MIN_CHECKED = 5
MIN_EMPTY = 5
"""Empty runs of the main loop before their median replaces the calibrated floor."""
PROBES = 5
WARM_MIN, WARM_MAX = 2, 200
"""Warm-up pairs: at least, and at most however long warmup_ms is."""
SAMPLE_MAX_MS = 25.0
"""Batching stops before the reference's half of a sample would take longer than this."""
STOPPED_CPU_MS = 100.0
"""CPU time a candidate's stopped processes may use over a whole phase (cpu) before it is
called implausible. Honest candidates' use at most 20 ms (36 CPU self-check evaluations: a
stop that lands while a process still runs costs it a tick at most); a child stopped inside
mmap(MAP_POPULATE) calls uses 760 ms (attack stops_late.py)."""
LATE_MIN_SAMPLES = 5
"""Samples a phase ends with when it is past half its time limit (`late`)."""
MAX_TIME_MIN_SAMPLES = 10
"""max_timing_s ends the main loop only once this many samples are in, or once it has run
MAX_TIME_HARD_FACTOR times as long. A shrink (expiries.py) throws away the samples taken at
the old batch, so a shrink near the end of max_timing_s would leave too few samples for an
interval; ten give the paired bootstrap one."""
MAX_TIME_HARD_FACTOR = 3
STOPS_THAT_RAN = 3
"""...and in at least this many of its stops (freezer.RankFreezer.stops_that_ran)."""
STOP_EVERY = 10
"""Samples between two looks at the interval, at least (a quarter of those so far, past 40).
Looks 20 samples apart end the allreduce expert at 8192x8192 at 20, 40 or 60 samples (H100),
each sample 25-30 ms: a look every 10 ends it nearer where its interval reaches the target. Every judge sees the same samples, so all of them stop at the same look."""
MEASURABLE = 0.25
"""A half whose median time (window less floor) is under this fraction of the floor is
`unmeasurable`: what the harness costs around the calls would decide its figure."""


@dataclass(frozen=True)
class HalfRow:
    """One half of one sample on one judge (judge's clock, perf_counter seconds / ms)."""
    t_ready: float
    t_open: float
    t_done: float
    report_ms: float
    expired: int


@dataclass(frozen=True)
class PairRow:
    ref: HalfRow
    cand: HalfRow
    floor_ms: float
    """This judge's calibrated floor for a sample of this many calls."""
    empty: HalfRow | None = None
    """The same number of do-nothing calls on the reference worker, right after the pair."""
    late: bool = False
    """This judge is past half of the phase's time limit (every judge sees every row: the
    decision to stop is the same on all of them)."""


@dataclass(frozen=True)
class Sample:
    """One sample as every judge agreed on it: each half's slowest rank (ms for the sample's
    calls), and whether a half's gate expired (the empty run's counts as the reference's:
    it runs on the reference worker)."""
    ref_ms: float
    cand_ms: float
    ref_report_ms: float
    cand_report_ms: float
    floor_ms: float
    ref_expired: bool
    cand_expired: bool
    empty_ms: float | None = None
    """The empty run's window beside the pair (the floor's evidence), if there was one."""


@dataclass
class _FirstHalf:
    """A pair between its halves (on cpu a gather of the judges separates them)."""
    sets: list
    n: int
    check: tuple[int, Any, inp.Written] | None
    empty: HalfRow | None
    ref: HalfRow | None = None
    cand: HalfRow | None = None
    checks: Callable[[], None] | None = None


class Interleaved:
    def __init__(self, session: Session) -> None:
        self.s = session
        self.ctx = session.ctx
        self.cfg = session.cfg
        assert session.ref is not None, "timing needs the reference worker"
        self.ref_side: WorkerSide = session.ref
        self.cand_side: WorkerSide = session.cand
        # One gate mode for both halves (and every rank): a half held behind the gate and
        # one launched after it would be two instruments again.
        self.can_hold = bool(self.ctx.cuda and self.cfg.gate and self.ref_side.gated and self.cand_side.gated)
        self.hold = False
        self.mode: TimingMode | None = None
        self.mode_source = ""
        self.unmeasurable = ""
        self.unmeasurable_kind = ""
        """too_short | waits_on_host | no_gate | loaded | reference_makes_groups: why no figure
        (verdict.py weighs them apart)."""
        self.expiries = HeldExpiries(1)
        self.meter: ConditionsMeter | None = None
        self.t_main: float | None = None
        self.k = 1
        self.rng = session.secrets.check_rng()
        self.deadline = time.monotonic() + session.timeouts.timing_s
        self.late_at = time.monotonic() + session.timeouts.timing_s / 2
        self.ref_win: list[float] = []
        self.cand_win: list[float] = []
        self.ref_rep: list[float] = []
        self.cand_rep: list[float] = []
        self.sample_at: list[float] = []
        """Wall-clock time (epoch seconds) each sample ended on this judge: lines samples up with
        what else the machine logged (GPU clocks, other processes)."""
        self.floor_ms = 0.0
        self.empty = self.ctx.cuda
        """cuda: empty runs through the phase set the floor. On cpu they moved references
        timed against themselves to 0.76-0.81 (a 2-core machine at load 2; 1.01 without them):
        the calibrated floor stays there."""
        self.empty_win: list[float] = []
        """Windows of the empty runs of the main loop: the floor once there are enough."""
        self.checked = 0
        self.freezing = False
        """cpu: the worker whose half is not being timed is stopped (judge/freezer.py); every
        judge agrees on it at the phase's start."""
        self.running: WorkerSide | None = None
        self.impossible: list[str] = []
        self.before_open: list[float] = []
        self.spent: dict[str, float] = {}
        """Where the phase's seconds went (inputs, place, runs, checks, gather): reported as
        `timing.<part>` beside the phases, for people tuning the harness' node-seconds."""

    @contextmanager
    def clock(self, part: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.spent[part] = self.spent.get(part, 0.0) + time.perf_counter() - t0

    # ------------------------------------------------------------------ one half of a pair
    def half(self, side: WorkerSide, sets: list[tuple], check: tuple[int, Any, inp.Written] | None,
             n: int) -> tuple[HalfRow, Callable[[], None]]:
        """k calls on one worker, its window on this judge's clock; and the checks of the
        candidate's inputs and (secretly chosen) outputs, to run once the pair is done."""
        s = self.s
        assert side.layout is not None
        side.layout.reset()
        placed, slots, calls = [], [], []
        with self.clock("place"):
            for a, e in zip(sets, self.shapes_from):
                p, sl, c = s.call(side, a, e)
                placed.append(p)
                slots.append(sl)
                calls.append(c)
        self.awake(side)
        with self.clock("runs"):
            r = s.run_timed(side, calls, hold=self.hold, timeout_s=max(1.0, self.deadline - time.monotonic()))
        row = HalfRow(t_ready=r.t_ready, t_open=r.t_open, t_done=r.t_done, report_ms=r.reported_ms,
                      expired=r.expired)
        return row, lambda: self.check_half(side, r, placed, slots, check, n)

    def check_half(self, side: WorkerSide, r: TimedRun, placed: list, slots: list,
                   check: tuple[int, Any, inp.Written] | None, n: int) -> None:
        s = self.s
        if side is self.cand_side:
            # Arguments the reference writes are written in every timed call: the call checked
            # in secret compares them with the reference's writes; all others stay bit for bit.
            j_changed = inp.first_changed(placed, s.written_leaves)
            if j_changed is not None:
                s.fail(FailureClass.INCORRECT, f"timed call {n}.{j_changed}: the candidate modified its input "
                       "tensor(s); inputs must be left as they are", trial=s.trials)
            else:
                if check is not None:
                    j, expected, written = check
                    self.checked += 1
                    s.check_output(r.done.outputs[j], slots[j], expected, written, placed[j],
                                   f"output of timed call {n}.{j} (checked in secret)", s.trials)
            self.before_open.append((r.t_open - r.t_ready) * 1e3)

    # ------------------------------------------------------------------ steps in lockstep
    def step(self, fn: Callable[[], Any]) -> list[Any]:
        """Run fn on this judge, then gather (failure, data) from every judge."""
        s = self.s
        data = None
        try:
            data = fn()
        except WorkerFault as f:
            s.fault(f, s.trials)
        except Stop:
            raise
        except Exception:  # noqa: BLE001 - a harness bug
            tb = traceback.format_exc()
            s.fail(FailureClass.HARNESS_ERROR, f"judge error while timing: {tb.strip().splitlines()[-1][:300]}", log=tb)
        with self.clock("gather"):
            rows = self.ctx.group.gather((s.report.failure, data))
        if any(r[0] for r in rows):
            raise Stop()
        return [r[1] for r in rows]

    def empty_half(self, k: int, side: WorkerSide | None = None) -> HalfRow:
        """k do-nothing calls, timed like a half: on the reference worker, what the harness
        costs around k calls (messages, gate, synchronize, delivering the outputs), measured
        through the whole phase. The reference worker runs no candidate code, so nothing the
        candidate does can move it. On the candidate's worker (`side`) the same run is only a
        warm-up: its time is never used."""
        s, side = self.s, side or self.ref_side
        assert side.layout is not None
        side.layout.reset()
        with self.clock("place"):
            calls = s.empty_calls(side, k)
        self.awake(side)
        with self.clock("runs"):
            r = s.run_timed(side, calls, hold=self.hold, timeout_s=max(1.0, self.deadline - time.monotonic()),
                            calibrate=True)
        return HalfRow(t_ready=r.t_ready, t_open=r.t_open, t_done=r.t_done, report_ms=r.reported_ms,
                       expired=r.expired)

    def awake(self, side: WorkerSide) -> None:
        """cpu: `side`'s rank runs, the other worker's rank is stopped (judge/freezer.py).
        Called only where every judge's previous half has ended (after a gather): a peer
        rank still finishing its half must not be stopped under its judge."""
        if not self.freezing or self.running is side:
            return
        other = self.ref_side if side is self.cand_side else self.cand_side
        assert side.freezer is not None and other.freezer is not None
        with self.clock("freeze"):
            other.freezer.freeze()
            side.freezer.thaw()
        self.running = side

    def thaw_all(self) -> None:
        for side in (self.ref_side, self.cand_side):
            if side.freezer is not None:
                side.freezer.thaw()
        self.running = None

    def sample(self, make_sets: Callable[[], list[tuple]], n: int, check_j: int | None,
               empty: bool = False) -> list[PairRow]:
        """One pair on every judge: each judge's PairRow. Where workers are stopped between
        halves (cpu) the pair is two steps, so that each second half starts after every
        judge's first half ended."""
        if not self.freezing:
            return self.step(lambda: self.second(self.first(make_sets(), n, check_j, empty)))
        part: list[_FirstHalf] = []
        self.step(lambda: part.append(self.first(make_sets(), n, check_j, empty)))
        return self.step(lambda: self.second(part[0]))

    def first(self, sets: list[tuple], n: int, check_j: int | None, empty: bool) -> "_FirstHalf":
        """The pair's first half, in the order the sample's parity says (and, if asked, the
        empty run before it)."""
        check = None
        if check_j is not None:
            # Before any worker runs: the reference is a collective of the judges, and a
            # judge whose worker fails next must already have taken part in it.
            with self.clock("checks"):
                check = (check_j, *self.s.reference(sets[check_j]))
        # Output slots are laid out like the first trial's outputs, except for the checked
        # call, whose slots fit its own reference outputs (data-dependent shapes). Both
        # halves get the same layout: what delivering outputs costs is the same for both.
        self.shapes_from = [self.s.trial_expected[0]] * len(sets)
        if check is not None:
            self.shapes_from[check[0]] = check[1]
        # A worker that ran just before its half starts it warm (the GPU already on its
        # context, its thread awake), and the half that opens a sample starts after the
        # judges made its inputs (the GPU idle meanwhile). Each half must meet each start
        # equally often. The first half of a sample goes right after an empty run on its own
        # worker, the second right after the other worker: E R C | W C R | E R C ..., the
        # empty run E (on the reference worker: the floor) and the warm-up W (on the
        # candidate's, never timed) taking the start after the gap. Other orders bias a
        # reference timed against itself: E after every pair starts the reference warm
        # twice as often (0.91-0.99, H100); E R C | C R E starts only the candidate's half
        # after the gap (0.95-0.98 on long calls: allgather_kv_attention, ddp_mlp_adam_step).
        e = None
        if n % 2 == 0:
            e = self.empty_half(len(sets)) if empty else None
            ref, _ = self.half(self.ref_side, sets, None, n)
            return _FirstHalf(sets, n, check, e, ref=ref)
        if empty:
            self.empty_half(len(sets), self.cand_side)
        cand, checks = self.half(self.cand_side, sets, check, n)
        return _FirstHalf(sets, n, check, e, cand=cand, checks=checks)

    def second(self, f: "_FirstHalf") -> PairRow:
        """The pair's second half, then the checks of the candidate's half: after both halves,
        so neither half waits behind them (on odd samples the reference's had, and the
        reference went second after a gap the candidate's never had)."""
        if f.ref is None:
            ref, _ = self.half(self.ref_side, f.sets, None, f.n)
            cand, checks = f.cand, f.checks
        else:
            ref = f.ref
            cand, checks = self.half(self.cand_side, f.sets, f.check, f.n)
        assert cand is not None and checks is not None
        with self.clock("checks"):
            checks()
        return PairRow(ref=ref, cand=cand, floor_ms=self.s.floor(len(f.sets)), empty=f.empty,
                       late=time.monotonic() > self.late_at)

    def combine(self, rows: list[PairRow]) -> "Sample":
        """One sample as every judge sees it: the slowest rank of each half, every window
        starting when the last judge opened its gate (perf_counter is one clock for all the
        node's processes)."""
        out = []
        for pick in (lambda r: r.ref, lambda r: r.cand):
            halves = [pick(r) for r in rows]
            opened = max(h.t_open for h in halves)
            out.append(max(max(0.0, (h.t_done - opened) * 1e3) for h in halves))
            out.append(max(h.report_ms for h in halves))
        for rank, r in enumerate(rows):
            ready_ms = (r.cand.t_done - r.cand.t_ready) * 1e3
            if r.cand.report_ms > ready_ms + EPS_MS:
                self.impossible.append(f"rank {rank} reported {r.cand.report_ms:.4g} ms for a run the judge "
                                       f"saw take {ready_ms:.4g} ms from inputs to answer")
        ref_expired = any(r.ref.expired for r in rows)
        cand_expired = any(r.cand.expired for r in rows)
        empties = [r.empty for r in rows if r.empty is not None]
        empty_ms = None
        if empties:
            opened = max(h.t_open for h in empties)
            empty_ms = max(max(0.0, (h.t_done - opened) * 1e3) for h in empties)
            ref_expired = ref_expired or any(h.expired for h in empties)  # the reference worker's
        ref_w, ref_r, cand_w, cand_r = out
        return Sample(ref_ms=ref_w, cand_ms=cand_w, ref_report_ms=ref_r, cand_report_ms=cand_r,
                      floor_ms=max(r.floor_ms for r in rows), ref_expired=ref_expired, cand_expired=cand_expired,
                      empty_ms=empty_ms)

    def fresh(self, k: int) -> list[tuple]:
        with self.clock("inputs"):
            return [self.s.make() for _ in range(k)]

    def ratios(self) -> list[float]:
        """Each sample's reference time over its candidate time, both less the floor (and
        never below a hundredth of it, as evidence.py figures them)."""
        lo = max(LEAST_SHARE * self.floor_ms, 1e-9)
        return [max(r - self.floor_ms, lo) / max(c - self.floor_ms, lo)
                for r, c in zip(self.ref_win, self.cand_win)]

    def net(self, windows: list[float]) -> float:
        return statistics.median(windows) - self.floor_ms if windows else math.inf

    # ------------------------------------------------------------------ the phase
    def run(self) -> None:
        s = self.s
        s.phase = "timing"
        t_phase = time.monotonic()
        self.meter = ConditionsMeter([self.cand_side.root_pid, self.ref_side.root_pid], host=self.ctx.rank == 0)
        self.can_hold = all(self.ctx.group.gather(self.can_hold))
        both = self.ref_side.freezer is not None and self.cand_side.freezer is not None
        self.freezing = all(self.ctx.group.gather(both))
        try:
            self.sample_all(s.trial_args, t_phase)
        finally:
            self.thaw_all()
        self.judge_stopped()

    def judge_stopped(self) -> None:
        """cpu: what the workers' stopped processes did meanwhile (judge/freezer.py). The
        reference's is the harness's own evidence; the candidate's, past what stopping
        takes, is the candidate resuming itself: never scored."""
        s = self.s
        for side in (self.ref_side, self.cand_side):
            if side.freezer is not None:
                s.report.seconds[f"timing.stopped_cpu.{side.name}"] = side.freezer.ran_ms / 1e3
        f = self.cand_side.freezer
        if f is not None and f.ran_ms > STOPPED_CPU_MS and f.stops_that_ran >= STOPS_THAT_RAN:
            s.fail(FailureClass.IMPLAUSIBLE, f"the candidate's processes used {f.ran_ms:.0f} "
                   "ms of CPU while stopped for the reference's halves: something resumed them", own_fault=True)

    def sample_all(self, trial_sets: list[tuple], t_phase: float) -> None:
        """The phase in its steps: the problem's mode (kept by the node, or decided here from
        the reference's probe), warm-up, the samples, the report."""
        if self.makes_groups():  # known from the trials: no sample is worth taking
            self.report_phase("unmeasurable", t_phase)
            return
        mode = self.s.job.mode
        if mode is None:
            # A mode decided where the gate could not be mapped says nothing of the problem:
            # used here, never kept by the node.
            gate_missing = self.ctx.cuda and self.cfg.gate and not self.can_hold
            self.mode_source = "improvised" if gate_missing else "calibrated"
            mode = self.decide_mode(trial_sets)
        else:
            self.mode_source = "cached"
        self.apply_mode(mode)
        stopped = "unmeasurable"
        if not self.unmeasurable:
            self.warm_up(trial_sets)
            stopped = self.take_samples()
        self.report_phase(stopped, t_phase)

    def makes_groups(self) -> bool:
        """Whether the reference made new process groups in a call after its first, on any
        judge (every judge asks at the same step): then no figure. Each call of it builds
        communicators (931 ms a call for upstream 48 at ws 2, which read 2.33 [1.62, 3.06]
        against itself), and leaks them into the judges."""
        if not any(self.ctx.group.gather(self.s.makes_groups)):
            return False
        if not self.unmeasurable:
            self.unmeasurable = ("the reference makes new process groups in every call: its time is "
                                 "communicator set-up, not its kernels'")
            self.unmeasurable_kind = "reference_makes_groups"
        return True

    def decide_mode(self, trial_sets: list[tuple]) -> TimingMode:
        """The problem's mode, from the reference's half of a few probe samples alone: held
        if its calls can wait behind the gate (a reference that waits on the GPU from the
        host expires it), and as many calls per sample as make its half measurable.

        A candidate's half never decides anything here: one that slept in the probe's
        unchecked calls chose one call per sample where the reference's short calls read
        3x slower each (attack slow_probe.py), and one that expired the gate set both halves
        unheld, a second instrument for the same kernel (reduce_scatter's expert: 2.26x
        unheld, 1.27x held). Its half still runs, as a warm-up."""
        s = self.s
        self.hold = self.can_hold
        probe: list[Sample] = []
        i = 0
        while len(probe) < PROBES:
            rows = self.sample(lambda i=i: [trial_sets[i % len(trial_sets)]], i, None,
                               empty=self.ctx.cuda and not self.hold)
            smp = self.combine(rows)
            i += 1
            if smp.ref_expired and self.hold:
                # The reference waits on the host: its calls run before any gate opens, and a
                # window from the opening sees a fraction of them. Probe again, not held, with
                # empty runs of its own (the calibrated floor is a held run's).
                self.hold = False
                probe, self.empty_win = [], []
                continue
            probe.append(smp)
            if smp.empty_ms is not None:
                self.empty_win.append(smp.empty_ms)
        self.impossible.clear()
        floor1 = max(p.floor_ms for p in probe)
        floor_fixed = s.floor_fit[0]
        if self.empty_win:  # not held (cuda): this probe's own floor of one call
            floor1 = floor_fixed = statistics.median(self.empty_win)
            self.empty_win = []
        one_ref = statistics.median(p.ref_ms for p in probe) - floor1
        s.report.seconds.update({"timing.probe.reference_call": one_ref / 1e3,
                                 "timing.probe.floor": floor1 / 1e3, "timing.probe.held": float(self.hold)})
        # Batch until a sample is measurable: at least batch_ms of the reference's calls, and
        # at least the floor's fixed part (messages, synchronize), which then weighs less per
        # call. A sample of a slow reference stays short: samples, not calls, make the interval.
        one = max(one_ref, 1e-3)
        k_max = max(1, min(s.calls_fit, self.cfg.max_batch_calls, math.floor(SAMPLE_MAX_MS / one)))
        k, batch_ms = 1, self.cfg.batch_ms if self.ctx.cuda else self.cfg.cpu_batch_ms
        while k < k_max and k * one < max(batch_ms, floor_fixed):
            k *= 2
        # Every judge holds the same mode (each judge's floor and arena differ a little, and
        # ranks whose calls differ in number leave each other in a collective).
        held = all(self.ctx.group.gather(self.hold))
        k = min(self.ctx.group.gather(min(k, k_max)))
        if held:
            k = self.fitting_batch(trial_sets, k)
        return TimingMode(held=held, calls_per_sample=k)

    def fitting_batch(self, trial_sets: list[tuple], k: int) -> int:
        """The most calls per sample, up to k, that the reference's half queues behind a held
        gate without its expiring (k calls of many kernels each fill the launch queue: the
        host then waits on the GPU the gate holds). Two samples in a row must hold."""
        policy, held_in_a_row, i = HeldExpiries(k), 0, 0
        while held_in_a_row < STREAK:
            k = policy.k
            sets = [trial_sets[(i * k + j) % len(trial_sets)] for j in range(k)]
            smp = self.combine(self.sample(lambda sets=sets: sets, i, None))
            i += 1
            action = policy.see(smp.ref_expired, False)
            held_in_a_row = held_in_a_row + 1 if action == "keep" else 0
            if action == "give_up":  # it held one call in the probe: keep the least
                break
        self.impossible.clear()
        return policy.k

    def apply_mode(self, mode: TimingMode) -> None:
        self.mode = mode
        self.hold = mode.held
        if mode.held and not self.can_hold:
            self.unmeasurable = ("this problem is timed with its calls held behind the launch gate, which this "
                                 "evaluation's workers could not map")
            self.unmeasurable_kind = "no_gate"
        # The arena bounds the batch (it depends on the GPU's free memory): the same k
        # everywhere but where a worker's arena cannot hold it, and the result says which.
        self.k = min(self.ctx.group.gather(max(1, min(mode.calls_per_sample, self.s.calls_fit,
                                                           self.cfg.max_batch_calls))))
        self.expiries = HeldExpiries(self.k)

    def warm_up(self, trial_sets: list[tuple]) -> None:
        """Pairs on the trials' inputs (nothing measured or checked) until warmup_ms of the
        judges' clock has passed, at least WARM_MIN. A count derived from the probe's
        per-call figure made 200 pairs of 64 calls (6 s) where a 12 us call read as nothing
        beside its floor; a pair's wall time is mostly what the worker takes to queue its
        calls, which no figure of the calls says. The judges agree when to stop."""
        k = self.k
        t_warm, i = time.monotonic(), 0
        while True:
            sets = [trial_sets[(i * k + j) % len(trial_sets)] for j in range(k)]
            self.sample(lambda sets=sets: sets, i, None)
            i += 1
            if i >= WARM_MIN and any(self.ctx.group.gather(
                    time.monotonic() - t_warm >= self.cfg.warmup_ms / 1e3 or i >= WARM_MAX)):
                break
        self.impossible.clear()
        self.empty_win = []

    def take_samples(self) -> str:
        """The main loop: fresh inputs for every call, a secret sample of calls checked. Returns
        why it stopped."""
        min_n = max(self.cfg.min_calls, MIN_CHECKED)
        span = max(1, min_n // MIN_CHECKED)
        planned = {i * span + self.rng.randrange(span) for i in range(MIN_CHECKED)}
        n, batch = 0, min_n
        t_main = time.monotonic()
        self.t_main = t_main
        while True:
            for _ in range(batch):
                k = self.k
                check_j = None
                if n in planned or (n >= min_n and self.rng.random() < 0.05):
                    check_j = self.rng.randrange(k)
                rows = self.sample(lambda: self.fresh(k), n, check_j, empty=self.empty)
                smp = self.combine(rows)
                if self.hold:
                    # Every judge sees the same rows, so every judge takes the same turn here.
                    action = self.expiries.see(smp.ref_expired, smp.cand_expired)
                    if action == "give_up":
                        self.unmeasurable, self.unmeasurable_kind = self.expiries.why(), "waits_on_host"
                        return "waits_on_host"
                    if action == "shrink":
                        self.k = self.expiries.k
                        self.ref_win, self.cand_win, self.ref_rep, self.cand_rep = [], [], [], []
                        self.sample_at = []
                        self.empty_win, n = [], 0
                        continue
                    if action == "drop":
                        continue
                if smp.empty_ms is not None:
                    self.empty_win.append(smp.empty_ms)
                # The calibration's floor moved between evaluations enough to move a figure by
                # 10% (the allreduce expert at 8192x8192 on one H100: 0.202-0.221 ms over 5
                # evaluations); the median of the phase's own empty runs is one figure of hundreds.
                self.floor_ms = statistics.median(self.empty_win) if len(self.empty_win) >= MIN_EMPTY else smp.floor_ms
                self.ref_win.append(smp.ref_ms)
                self.sample_at.append(time.time())
                self.cand_win.append(smp.cand_ms)
                self.ref_rep.append(smp.ref_report_ms)
                self.cand_rep.append(smp.cand_report_ms)
                n += 1
                # A machine so loaded that the minimum of samples would not fit the phase's
                # limit (each sample took seconds: four evaluations on a 2-core machine) ends the
                # phase with what it has, not with a timeout the candidate would be blamed for.
                if any(r.late for r in rows) and len(self.cand_win) >= LATE_MIN_SAMPLES:
                    return "late"
            done_n = len(self.cand_win)
            # The interval that matters is the speedup's: paired ratios cancel the drift
            # that both halves of a sample share, which each half's own interval keeps.
            if done_n >= self.cfg.min_calls and rel_ci_of_median(self.ratios()) <= self.cfg.target_rel_ci:
                return "stable"
            if done_n >= self.cfg.max_calls:
                return "max_calls"
            # Every judge must leave the loop at the same batch (the next step is a gather
            # with all of them), and their clocks started apart: the decision is agreed. A
            # judge that left alone on its own clock hung the others until the node's deadline.
            elapsed = time.monotonic() - t_main
            if any(self.ctx.group.gather(elapsed >= self.cfg.max_timing_s and (
                    done_n >= MAX_TIME_MIN_SAMPLES or elapsed >= MAX_TIME_HARD_FACTOR * self.cfg.max_timing_s))):
                return "max_time"
            # cpu: as before STOP_EVERY (its evaluations end at max_timing_s either way).
            batch = max(STOP_EVERY, done_n // 4) if self.ctx.cuda else max(self.cfg.min_calls, done_n // 2)

    def report_phase(self, stopped: str, t_phase: float) -> None:
        s, k = self.s, self.k
        s.report.seconds["timing"] = time.monotonic() - t_phase
        if self.t_main is not None:
            s.report.seconds["timing.main"] = time.monotonic() - self.t_main
        for part, sec in self.spent.items():
            s.report.seconds[f"timing.{part}"] = sec
        s.report.checked_timed_calls = self.checked
        self.makes_groups()  # with one trial, only the secretly checked calls can show it
        unmeasurable, kind = self.unmeasurable, self.unmeasurable_kind
        if not unmeasurable and self.cand_win:
            for side, wins in ((self.ref_side, self.ref_win), (self.cand_side, self.cand_win)):
                if self.net(wins) < MEASURABLE * self.floor_ms:
                    unmeasurable = (f"the {side.name}'s {k} call(s) per sample took {self.net(wins):.4g} ms beyond "
                                    f"the {self.floor_ms:.4g} ms the harness costs around them: too short to time")
                    kind = f"too_short_{side.name}"
                    break
        assert self.meter is not None
        judges_cpu_s = sum(self.ctx.group.gather(self.meter.own_s()))
        paces = self.ctx.group.gather((self.ref_side.pace_us, self.cand_side.pace_us))
        if self.ctx.rank == 0:
            conditions = self.meter.read(judges_cpu_s)
            load = loaded(conditions, "cuda" if self.ctx.cuda else "cpu", self.cfg.max_foreign_cpu)
            if load and not unmeasurable:
                unmeasurable, kind = load, "loaded"
            s.report.timing = TimingSamples(
                reference_window_ms=self.ref_win, candidate_window_ms=self.cand_win,
                reference_report_ms=self.ref_rep, candidate_report_ms=self.cand_rep, floor_ms=self.floor_ms,
                floor_curve_ms=[[k_, ms] for k_, ms in sorted(s.floor_ms.items())],
                calls_per_sample=k, gated=self.hold, stopped=stopped, unmeasurable=unmeasurable,
                before_open_ms=statistics.median(self.before_open) if self.before_open else None,
                impossible=self.impossible[:10], mode_source=self.mode_source,
                reference_expired=self.expiries.reference, candidate_expired=self.expiries.candidate,
                unmeasurable_kind=kind, problem_calls_per_sample=self.mode.calls_per_sample if self.mode else k,
                conditions=conditions, loaded=bool(load), empty_window_ms=list(self.empty_win),
                sample_at_s=list(self.sample_at),
                context_pace_us=[list(p) for p in paces if p[0] is not None and p[1] is not None])
        if self.impossible:
            s.fail(FailureClass.IMPLAUSIBLE, "the worker reported more time than the judge saw pass: "
                   + self.impossible[0], own_fault=True)


def run_timing(session: Session) -> None:
    """The session's timing phase (Session.run calls it when the job is timed)."""
    Interleaved(session).run()
