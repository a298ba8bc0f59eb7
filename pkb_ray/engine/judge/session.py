"""One evaluation on one judge: the phases, each followed by a check-in with the other judges.

  start      the worker sets up (device, a process group whose collectives refuse)
  prepare    inputs for the trials from the secret, their reference outputs, the arena, the
             candidate's gate
  calibrate  before any candidate code exists in the worker: what a run costs besides the
             calls (messages, gate, synchronize, output copies), on the judge's clock
  load       the worker imports the candidate
  trial:N    one untimed call on fresh inputs; outputs compared, inputs checked untouched
  timing     reference and candidate in alternation (judge/timing.py)

After every step all judges gather whether their worker is still fine: a judge whose worker
failed must not enter the next reference collective while the others do. The first failure
is also sent to the node at once, which stops the sandbox so the other workers do not hang
on a dead peer until their phase limit.
"""

from __future__ import annotations

import statistics
import time
import traceback
from dataclasses import dataclass, field, fields
from typing import Any, Callable

import torch

from pkb_ray.config.schema import TimeoutConfig, TimingConfig
from pkb_ray.engine.judge import comparator
from pkb_ray.engine.judge import inputs as inp
from pkb_ray.engine.judge.context import JudgeContext
from pkb_ray.engine.judge.control import JudgeEvent, JudgeJob, JudgeReport
from pkb_ray.engine.judge.link import WorkerFault, WorkerLink
from pkb_ray.engine.wire import messages as m
from pkb_ray.engine.wire.arena import Arena, Layout, make_arena
from pkb_ray.engine.wire.gate import GatePage
from pkb_ray.records import FailureClass

CALIBRATION_CALLS = (1, 4, 16, 64)
"""Runs of this many do-nothing calls measure the judge-clock floor before the candidate loads."""
ARENA_BUDGET_BYTES = 1 << 30
"""Arena per rank: room for up to 64 calls' inputs and outputs back to back, within this."""
MAX_CALLS_PER_SAMPLE = 64


class _Stop(Exception):
    """Some judge's worker failed: every judge ends the session here."""


@dataclass
class RankOutcome:
    """What this judge concludes, built up phase by phase (sent as a frozen JudgeReport)."""
    failure: str = ""
    message: str = ""
    phase: str = ""
    trial: int = -1
    own_fault: bool = True
    worker_gone: bool = False
    max_abs_error: float = 0.0
    log: str = ""
    compiled: bool = False
    timing: dict = field(default_factory=dict)
    checked_timed_calls: int = 0
    flags: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    def to_report(self, eval_id: str, rank: int) -> JudgeReport:
        return JudgeReport(eval_id=eval_id, rank=rank, **{f.name: getattr(self, f.name) for f in fields(self)})


class Session:
    def __init__(self, ctx: JudgeContext, job: JudgeJob, link: WorkerLink, cand_page: GatePage | None,
                 cand_page_fd: int, notify: Callable[[JudgeEvent], None]) -> None:
        self.ctx, self.job, self.link, self.notify = ctx, job, link, notify
        self.cand_page, self._page_fd = cand_page, cand_page_fd
        self.report = RankOutcome()
        self.secrets = inp.Secrets(job.seed)
        self.cfg = TimingConfig(**job.timing)
        self.timeouts = TimeoutConfig(**job.timeouts)
        self.phase = "start"
        self.arena: Arena | None = None
        self.layout: Layout | None = None
        self.cand_gate = False
        self.overhead_ms: dict[int, float] = {}
        self.gen = 0
        self.worst = 0.0
        self._t_phase = time.monotonic()

    # ------------------------------------------------------------------ plumbing
    @property
    def device(self) -> str:
        return self.ctx.device

    def sync(self) -> None:
        if self.ctx.cuda:
            torch.cuda.synchronize()

    def next_gen(self) -> int:
        self.gen += 1
        return self.gen

    def fail(self, failure: FailureClass, message: str, *, trial: int = -1, log: str = "",
             own_fault: bool = True, max_abs_error: float | None = None, gone: bool = False) -> None:
        if self.report.failure:
            return
        r = self.report
        r.failure = failure.value
        r.message = f"rank {self.ctx.rank}, {message}" if own_fault else message
        r.phase, r.trial, r.log, r.own_fault, r.worker_gone = self.phase, trial, log[-20000:], own_fault, gone
        if max_abs_error is not None:
            r.max_abs_error = max_abs_error
        self.notify(JudgeEvent(eval_id=self.job.eval_id, phase=self.phase, failure=failure.value,
                               message=r.message, trial=trial, worker_gone=gone))

    def fault(self, f: WorkerFault, trial: int = -1) -> None:
        # A worker that vanished may have been stopped by the node after another rank
        # failed: the node knows, and never names a rank it stopped itself as the cause.
        self.fail(f.failure, f.message, trial=trial, log=f.log, gone=f.gone)

    def step(self, name: str, fn: Callable[[], None], trial: int = -1) -> None:
        self.phase = name
        t0 = time.monotonic()
        try:
            fn()
        except WorkerFault as f:
            if name in ("start", "prepare", "calibrate") and f.failure != FailureClass.TIMEOUT:
                # No candidate code exists in the worker yet: whatever failed is ours.
                f = WorkerFault(FailureClass.HARNESS_ERROR, f"worker set-up: {f.message}", f.log, f.gone)
            self.fault(f, trial)
        except _Stop:
            raise
        except Exception:  # noqa: BLE001 - a harness bug: reported, and the node restarts the judges
            tb = traceback.format_exc()
            self.fail(FailureClass.HARNESS_ERROR, f"judge error in {name}: {tb.strip().splitlines()[-1][:300]}",
                      log=tb)
        self.report.seconds[name.split(":")[0]] = self.report.seconds.get(name.split(":")[0], 0.0) + \
            time.monotonic() - t0
        self.check_in()

    def check_in(self) -> None:
        if any(self.ctx.group.gather(self.report.failure)):
            raise _Stop()

    # ------------------------------------------------------------------ the phases
    def run(self) -> JudgeReport:
        try:
            self.step("start", self.start)
            self.step("prepare", self.prepare)
            if self.job.time_candidate:
                self.step("calibrate", self.calibrate)
            self.step("load", self.load)
            for t in range(self.job.trials):
                self.step(f"trial:{t}", lambda t=t: self.trial(t), trial=t)
            if self.job.time_candidate:
                from pkb_ray.engine.judge.timing import Interleaved

                Interleaved(self).run()
        except _Stop:
            pass
        finally:
            self.close()
        self.report.max_abs_error = max(self.report.max_abs_error, self.worst)
        return self.report.to_report(self.job.eval_id, self.ctx.rank)

    def close(self) -> None:
        try:
            self.link.send(m.Bye())
        except WorkerFault:
            pass
        if self.arena is not None:
            try:
                self.arena.close()
            except Exception:  # noqa: BLE001 - the worker may still map it; freed with the process
                pass
            self.arena = None

    def start(self) -> None:
        self.link.ask(m.Hello(rank=self.ctx.rank, world_size=self.ctx.world_size, device=self.device,
                              guard=self.job.guard, store_timeout_s=max(self.timeouts.start_s, self.timeouts.trial_s)),
                      (m.Ready,), self.timeouts.start_s, "start-up")

    def reference(self, args: tuple) -> Any:
        out = self.problem.solution(*inp.clone(args))
        self.sync()
        return inp.clone(out)

    def make(self) -> tuple:
        seed = self.secrets.input_seed()
        return self.problem.make_inputs(self.ctx.rank, self.ctx.world_size, seed, self.job.size, self.device)

    def prepare(self) -> None:
        self.problem = self.ctx.problem(self.job.loader, self.job.problems_source, self.job.problem_id)
        self.atol, self.rtol = self.problem.spec.atol, self.problem.spec.rtol
        self.trial_args = [self.make() for _ in range(max(1, self.job.trials))]
        self.trial_expected = [self.reference(a) for a in self.trial_args]
        per_call = max(inp.nbytes(a) + inp.nbytes(e) for a, e in zip(self.trial_args, self.trial_expected))
        # Room for 64 calls where that fits the budget; data-dependent shapes get 50% slack.
        one = int(per_call * 1.5) + 64 * 256
        nbytes = max(4 * one, min(MAX_CALLS_PER_SAMPLE * one, ARENA_BUDGET_BYTES))
        kind = "cuda" if self.ctx.cuda and self.job.transport == "cuda" else "host"
        self.arena = make_arena(kind, nbytes, self.device)
        self.layout = Layout(self.arena.nbytes)
        self.calls_fit = max(1, self.arena.nbytes // one)
        self.link.ask(m.MapArena(kind=kind, nbytes=self.arena.nbytes), (m.Ok,), self.timeouts.start_s,
                      "start-up", fds=[self.arena.fd])
        self.stage_back = kind == "host" and self.ctx.cuda
        if self.ctx.cuda and self.cfg.gate and self.cand_page is not None:
            try:
                self.link.ask(m.MapGate(timeout_us=int(self.cfg.gate_timeout_ms * 1000), ptx=self.ctx.gate_ptx), (m.Ok,),
                              self.timeouts.start_s, "start-up", fds=[self._page_fd])
                self.cand_gate = True
            except WorkerFault as f:
                if f.failure != FailureClass.HARNESS_ERROR:
                    raise
                self.report.flags.append("candidate_gate_unavailable")

    def call(self, args: tuple, expected: Any) -> tuple[inp.Placed, inp.Slots, dict]:
        """Place one call's arguments and output slots (the layout is reset by the caller)."""
        assert self.arena is not None and self.layout is not None
        placed = inp.place(args, self.arena, self.layout)
        slots = inp.slots_for(expected, self.arena, self.layout)
        return placed, slots, {"args": placed.tree, "outs": slots.descs}

    def run_timed(self, calls: list[dict], hold: bool, timeout_s: float, calibrate: bool = False) -> dict:
        """One timed run on the worker; the judge's clock around it. Times in ms."""
        gated = self.ctx.cuda and self.cand_gate
        gen = self.next_gen() if gated else 0
        expired0 = self.cand_page.expired(self.ctx.rank) if gated and self.cand_page is not None else 0
        self.ctx.scrub_l2()
        t_ready = self.link.send(m.Run(calls=calls, timed=True, gate_gen=gen, hold=hold,
                                       calibrate=calibrate, stage_back=self.stage_back and not calibrate))
        deadline = time.monotonic() + timeout_s
        t_open = t_ready
        if gated:
            q = self.link.receive((m.Queued,), deadline - time.monotonic(), self.phase)
            if q.gate_gen != gen:
                raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol: gate {q.gate_gen} != {gen}")
            assert self.cand_page is not None
            t_open = self.cand_page.open(self.ctx.rank, gen)
        done = self.link.receive((m.Done,), deadline - time.monotonic(), self.phase)
        t_done = time.perf_counter()
        if done.forbidden:
            raise WorkerFault(FailureClass.FORBIDDEN_API, f"{self.phase}: refused {', '.join(map(str, done.forbidden[:3]))}")
        if len(done.outputs) != len(calls):
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol: {len(done.outputs)} outputs for {len(calls)} calls")
        # This run's gate timeouts (the page counts them since the evaluation began).
        expired = (self.cand_page.expired(self.ctx.rank) - expired0) if gated and self.cand_page is not None else 0
        return {"done": done, "reported_ms": float(done.event_ms), "open_ms": (t_done - t_open) * 1e3,
                "ready_ms": (t_done - t_ready) * 1e3, "expired": expired, "t_open": t_open, "t_done": t_done,
                "t_ready": t_ready,
                "started_late_ms": (float(done.started_at) - t_ready) * 1e3}

    def calibrate(self) -> None:
        """Before the candidate exists in the worker: the judge-clock cost of a run of k
        calls that do nothing (the floor that candidate runs are measured above)."""
        assert self.layout is not None
        for k in sorted({min(k, self.calls_fit) for k in CALIBRATION_CALLS}):
            seen = []
            for _ in range(5):
                self.layout.reset()
                calls = [self.call(self.trial_args[0], self.trial_expected[0])[2] for _ in range(k)]
                r = self.run_timed(calls, hold=True, timeout_s=self.timeouts.start_s, calibrate=True)
                seen.append(r["open_ms"])
            # The median, not the least: the floor is compared with the typical run of a
            # candidate, and the least of five sits below it by the run-to-run jitter.
            self.overhead_ms[k] = statistics.median(seen)

    def overhead(self, k: int) -> float:
        """The calibrated judge-clock floor of a run of k calls: measured at a few k,
        interpolated linearly between them (never extrapolated upwards: a floor must stay
        below what a run of k honest calls costs)."""
        if not self.overhead_ms:
            return 0.0
        ks = sorted(self.overhead_ms)
        if k <= ks[0]:
            return self.overhead_ms[ks[0]]
        for lo, hi in zip(ks, ks[1:]):
            if k <= hi:
                f = (k - lo) / (hi - lo)
                return self.overhead_ms[lo] + f * (self.overhead_ms[hi] - self.overhead_ms[lo])
        return self.overhead_ms[ks[-1]]

    def load(self) -> None:
        self.link.ask(m.Load(source=self.job.candidate_source), (m.Ok,), self.timeouts.load_s, "loading the candidate")
        self.report.compiled = True

    def check_output(self, tree: Any, slots: inp.Slots, expected: Any, placed: inp.Placed, what: str,
                     trial: int) -> bool:
        assert self.arena is not None
        try:
            out = inp.rebuild(tree, slots, expected, self.arena, self.device)
        except m.ProtocolError as e:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol: {e}") from None
        v = comparator.compare(out, expected, self.atol, self.rtol)
        if not v.ok:
            assert v.failure is not None
            self.fail(v.failure, f"{what}: {v.message}", trial=trial, max_abs_error=v.max_abs_error)
            return False
        self.worst = max(self.worst, v.max_abs_error or 0.0)
        if not placed.unchanged():
            self.fail(FailureClass.INCORRECT, f"{what}: the candidate modified {placed.changed_arguments()} of "
                      "its input tensor(s); inputs must be left as they are", trial=trial)
            return False
        return True

    def trial(self, t: int) -> None:
        assert self.layout is not None
        self.layout.reset()
        placed, slots, call = self.call(self.trial_args[t], self.trial_expected[t])
        done = self.link.ask(m.Run(calls=[call], timed=False, gate_gen=0, stage_back=self.stage_back),
                             (m.Done,), self.timeouts.trial_s, f"trial {t}")
        if done.forbidden:
            raise WorkerFault(FailureClass.FORBIDDEN_API, f"trial {t}: refused {', '.join(map(str, done.forbidden[:3]))}")
        if len(done.outputs) != 1:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, "the worker broke the protocol: one output per call")
        self.check_output(done.outputs[0], slots, self.trial_expected[t], placed, f"trial {t}", t)
