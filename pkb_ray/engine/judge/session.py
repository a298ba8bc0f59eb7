"""One evaluation on one judge: the phases, each followed by a check-in with the other judges.

  start      the workers set up: the candidate's (device, a process group whose collectives
             refuse) and, for a timed job, the reference's (the same, with real collectives)
  prepare    inputs for the trials from the secret, their reference outputs, an arena and
             a gate page per worker
  calibrate  before any code but the harness's exists in either worker: what a run costs
             besides the calls (messages, gate, synchronize, output copies), on the judge's
             clock
  load       the candidate worker imports the candidate, the reference worker the reference
  trial:N    one untimed call on fresh inputs; outputs compared, inputs checked untouched
  timing     reference and candidate workers in alternation (judge/timing/)

After every step all judges gather whether their worker is still fine: a judge whose worker
failed must not enter the next reference collective while the others do. The first failure
is also sent to the node at once, which stops the sandbox so the other workers do not hang
on a dead peer until their phase limit.
"""

from __future__ import annotations

import statistics
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import torch

from pkb_ray.engine.judge import comparator
from pkb_ray.engine.judge import inputs as inp
from pkb_ray.engine.judge.context import JudgeContext
from pkb_ray.engine.judge.freezer import FreezeUnavailable, RankFreezer
from pkb_ray.engine.judge.group import process_group_count
from pkb_ray.engine.judge.link import WorkerFault, WorkerLink
from pkb_ray.engine.judge.stop import Stop
from pkb_ray.engine.protocol import codec, messages as m
from pkb_ray.engine.protocol.control import JudgeEvent, JudgeJob, JudgeReport
from pkb_ray.engine.wire.arena import Arena, Layout, make_arena
from pkb_ray.engine.wire.gate import GatePage
from pkb_ray.records import FailureClass

CALIBRATION_CALLS = (1, 4, 16, 64)
"""Runs of this many do-nothing calls measure the judge-clock floor before any code loads."""
CALIBRATION_RUNS = 5
"""Per batch size and worker."""
CALIBRATION_RUNS_CUDA = 1
"""On cuda the phase's own empty runs set the floor after a few samples (timing/sampling.py):
the calibration only chooses the batch size and times the first samples. So one run per
worker at the least and the most calls, after one thrown away at the most: 6 runs where 18
(three rounds of three sizes) take 0.27-0.33 s of an evaluation's 6 (allreduce at 8192x8192,
H100)."""
ARENA_BUDGET_BYTES = 1 << 30
"""Arena per rank and worker: room for up to 64 calls' inputs and outputs back to back,
within this (cpu)."""
CUDA_ARENA_BUDGET_BYTES = 4 << 30
"""The same on a GPU, within a sixteenth of its free memory (two workers' arenas; an eighth
runs fft2d_transpose out of memory): a sample of 5 allreduce calls at the bench size (1 GiB)
is 0.25 ms of work in a 0.8 ms window, and a few microseconds that differ between two
workers' messages move a reference against itself by 4% (H100). About a millisecond of
calls per sample makes them a fraction of a percent."""


@dataclass
class WorkerSide:
    """One worker as its judge sees it: the channel, its gate page, its arena. The candidate
    worker runs the candidate; the reference worker (timed jobs) runs the problem's
    reference in a worker of the same kind, so both halves of a speedup are timed alike."""
    name: str
    link: WorkerLink
    page: GatePage | None
    page_fd: int
    arena: Arena | None = None
    layout: Layout | None = None
    gated: bool = False
    gen: int = 0
    root_pid: int = 0
    """The first process of this worker's sandbox on the host (the node's word; 0: none)."""
    pid_inside: int = 0
    """The pid the rank reported at start-up, in its sandbox's pid namespace."""
    pace_us: float | None = None
    """cuda: its context's time per kernel as the worker measured it at set-up (before any
    candidate code existed in it), bounded here; evidence of the process's draw, never a figure."""
    freezer: RankFreezer | None = None
    """cpu, timed jobs: stops this worker's rank while the other worker's half is timed."""


@dataclass(frozen=True)
class TimedRun:
    """One timed run on a worker, on the judge's clock (perf_counter seconds) and the
    worker's own report (ms)."""
    done: m.Done
    reported_ms: float
    t_ready: float
    t_open: float
    t_done: float
    expired: int


def fit_floor(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(fixed ms, ms per call) of a line through the least windows of each batch size (the
    second smallest of its runs): the floor is what the harness costs at least around k
    calls. A floor set higher by a slow calibration run leaves a figure too small: on one H100
    the same reference reads 0.055 and 0.029 ms with the mean of the runs, the second below
    the hardware's least possible time. Theil-Sen through those points, because a loaded
    machine still throws one far off. Neither part is negative."""
    from scipy.stats import theilslopes

    by_k: dict[float, list[float]] = {}
    for k, ms in points:
        by_k.setdefault(float(k), []).append(ms)
    low = {k: sorted(v)[1] if len(v) > 2 else min(v) for k, v in by_k.items()}
    xs, ys = list(low), list(low.values())
    if len(xs) < 2:
        return max(0.0, ys[0] if ys else 0.0), 0.0
    slope, intercept, _, _ = theilslopes(ys, xs)
    slope = max(0.0, float(slope))
    if intercept < 0:  # the line through the median point, with the slope kept
        intercept = statistics.median(y - slope * x for x, y in zip(xs, ys))
    return max(0.0, float(intercept)), slope


class Session:
    def __init__(self, ctx: JudgeContext, job: JudgeJob, cand: WorkerSide, ref: WorkerSide | None,
                 notify: Callable[[JudgeEvent], None], timing_phase: Callable[["Session"], None]) -> None:
        # The timing phase comes from outside: it drives this session (timing/sampling.py
        # imports it), so the session does not import it back.
        self.ctx, self.job, self.notify, self.timing_phase = ctx, job, notify, timing_phase
        self.cand, self.ref = cand, ref
        self.report = JudgeReport(eval_id=job.eval_id, rank=ctx.rank)
        self.req = job.request
        self.secrets = inp.Secrets(job.seed)
        self.cfg = job.request.eval.timing
        self.timeouts = job.request.eval.timeouts
        self.trials = job.request.eval.trials
        self.phase = "start"
        self.floor_ms: dict[int, float] = {}
        self.floor_fit: tuple[float, float] = (0.0, 0.0)
        self.worst = 0.0
        self.calls_fit = 1
        self.stage_back = False
        self.trial_written: list[inp.Written] = []
        self.written_leaves: frozenset[int] = frozenset()
        """The tensor arguments the reference writes on any trial's inputs (inputs.Written),
        which the timed calls also take: every other one stays checked bit for bit."""
        self.makes_groups = False
        """The reference made a process group in a call after its first (upstream 48 makes
        two in each): its time is communicator set-up, which no figure is compared with."""
        self.reference_calls = 0

    # ------------------------------------------------------------------ plumbing
    @property
    def device(self) -> str:
        return self.ctx.device

    @property
    def sides(self) -> list[WorkerSide]:
        return [self.cand] + ([self.ref] if self.ref is not None else [])

    def sync(self) -> None:
        if self.ctx.cuda:
            torch.cuda.synchronize()

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

    def ask(self, side: WorkerSide, msg: codec.Message, expected: tuple, timeout_s: float, phase: str,
            fds: list[int] | None = None) -> codec.Message:
        """A request to one worker. The reference worker runs only harness code: whatever
        fails there is the harness's (or the machine's), never the candidate's."""
        try:
            return side.link.ask(msg, expected, timeout_s, phase, fds=fds)
        except WorkerFault as f:
            if side is self.cand:
                raise
            raise WorkerFault(FailureClass.HARNESS_ERROR, f"the reference worker failed: {f.message}",
                              f.log, f.gone) from None

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
        except Stop:
            raise
        except Exception:  # noqa: BLE001 - a harness bug: reported, and the node restarts the judges
            tb = traceback.format_exc()
            self.fail(FailureClass.HARNESS_ERROR, f"judge error in {name}: {tb.strip().splitlines()[-1][:300]}",
                      log=tb)
        spent = time.monotonic() - t0
        self.report.seconds[name.split(":")[0]] = self.report.seconds.get(name.split(":")[0], 0.0) + spent
        if name == "trial:0":  # a first call pays for the candidate's lazy set-up
            self.report.seconds["trial.first"] = spent
        self.check_in()

    def check_in(self) -> None:
        if any(self.ctx.group.gather(self.report.failure)):
            raise Stop()

    # ------------------------------------------------------------------ the phases
    def run(self) -> JudgeReport:
        try:
            self.step("start", self.start)
            self.step("prepare", self.prepare)
            if self.timed:
                self.step("calibrate", self.calibrate)
            self.step("load", self.load)
            for t in range(self.trials):
                self.step(f"trial:{t}", lambda t=t: self.trial(t), trial=t)
            if self.timed:
                self.timing_phase(self)
        except Stop:
            pass
        finally:
            self.close()
        self.report.max_abs_error = max(self.report.max_abs_error, self.worst)
        return self.report

    @property
    def timed(self) -> bool:
        return self.job.timed and self.ref is not None

    def close(self) -> None:
        for side in self.sides:
            try:
                side.link.send(m.Bye())
            except WorkerFault:
                pass
            if side.arena is not None:
                try:
                    side.arena.close()
                except Exception:  # noqa: BLE001 - the worker may still map it; freed with the process
                    pass
                side.arena = None

    def start(self) -> None:
        timeout = max(self.timeouts.start_s, self.timeouts.trial_s)
        for side in self.sides:
            # The reference worker runs the problem's own PyTorch + NCCL code: no guard.
            guard = self.req.guard if side is self.cand else False
            ready = self.ask(side, m.Hello(rank=self.ctx.rank, world_size=self.ctx.world_size, device=self.device,
                                           guard=guard, store_timeout_s=timeout),
                             (m.Ready,), self.timeouts.start_s, "start-up")
            assert isinstance(ready, m.Ready)
            side.pid_inside = ready.pid
            side.pace_us = m.bounded_pace(ready.pace_us)

    def find_freezers(self) -> None:
        """cpu, timed: each worker's rank as the judge will stop it (judge/freezer.py). After
        every judge's start-up (each worker's ranks all forked and set up) and before any
        candidate code exists: the pid each rank reported and the zygote's children (the
        ranks) are the harness's word. A judge that looked while its peer rank was not forked
        yet took that rank for a stray and stopped it under its own judge."""
        if not self.timed or self.ctx.cuda:
            return
        for side in self.sides:
            if side.root_pid <= 0:
                continue
            try:
                side.freezer = RankFreezer(side.root_pid, side.pid_inside, self.ctx.world_size)
            except (FreezeUnavailable, OSError, IndexError) as e:
                self.report.flags.append(f"{side.name}_not_frozen")
                self.report.log += f"{side.name} worker cannot be stopped between halves: {e}\n"

    def reference(self, args: tuple) -> tuple[Any, inp.Written]:
        """The reference's outputs on `args`, and what it wrote into (a clone of) them."""
        work = inp.clone(args)
        handed = inp.handed(work)
        groups = process_group_count()
        out = self.problem.solution(*work)
        self.sync()
        # a first call may make groups it keeps (clip_in_group caches its own): only a later
        # call's new group says the reference makes them per call
        self.makes_groups = self.makes_groups or (self.reference_calls > 0 and process_group_count() > groups)
        self.reference_calls += 1
        return inp.clone(out), inp.written_by(args, work, handed)

    def make(self) -> tuple:
        seed = self.secrets.input_seed()
        return self.problem.make_inputs(self.ctx.rank, self.ctx.world_size, seed, self.req.size, self.device)

    def prepare(self) -> None:
        self.find_freezers()
        self.problem = self.ctx.problem(self.job.loader, self.req.problems_source, self.req.problem_id)
        self.atol, self.rtol = self.problem.spec.atol, self.problem.spec.rtol
        self.ranked_step = comparator.dtype_step(self.problem.spec.sizes.get(self.req.size, {}).get(
            "dtype", self.problem.spec.dtype))
        self.trial_args = [self.make() for _ in range(max(1, self.trials))]
        refs = [self.reference(a) for a in self.trial_args]
        self.trial_expected = [out for out, _ in refs]
        self.trial_written = [w for _, w in refs]
        self.written_leaves = frozenset().union(*(w.leaves for w in self.trial_written))
        # Room for eval.timing.max_batch_calls calls where that fits the budget.
        one = inp.call_bytes(list(zip(self.trial_args, self.trial_expected)))
        # eval.transport: auto takes device memory on a GPU, host memory on cpu.
        kind = "cuda" if self.ctx.cuda and self.req.eval.transport != "host" else "host"
        budget, free = ARENA_BUDGET_BYTES, 0
        if kind == "cuda":
            # cuMemCreate cannot take what torch's allocator keeps cached (the references'
            # clones of the trials' arguments, freed): it is handed back first
            torch.cuda.empty_cache()
            free = torch.cuda.mem_get_info(self.device)[0]
            budget = min(CUDA_ARENA_BUDGET_BYTES, free // 16)
        # At least two calls (the calibration's two batch sizes), however large: four of
        # vocab_parallel_gemv_decode's at one rank (a 4 GiB weight) were 24 GiB per worker.
        nbytes = max(2 * one, min(self.cfg.max_batch_calls * one, budget))
        # Both arenas and a sample's fresh inputs (two calls' worth: the least batch, or one
        # call and the checked call's reference), beside what is held already: upstream 68 at
        # ws 2 holds its 26.5 GiB table a rank twice (the trials) and needs over 200 GiB more,
        # on a 141 GiB H200, where cuMemCreate's out-of-memory said nothing of why.
        need = 2 * nbytes + 2 * one
        if kind == "cuda" and need > free:
            self.fail(FailureClass.HARNESS_ERROR,
                      f"the problem does not fit {self.device} at world size {self.ctx.world_size}, size "
                      f"{self.req.size!r}: a call's arguments and outputs take {one / 2**30:.1f} GiB with room "
                      f"for larger inputs, and the evaluation needs {need / 2**30:.1f} GiB more (two calls in "
                      f"each worker's arena, a sample's fresh inputs) with {free / 2**30:.1f} GiB free; a larger "
                      "world size shards it smaller")
            return
        self.stage_back = kind == "host" and self.ctx.cuda
        for side in self.sides:
            side.arena = make_arena(kind, nbytes, self.device)
            side.layout = Layout(side.arena.nbytes)
            self.calls_fit = max(1, side.arena.nbytes // one)
            self.ask(side, m.MapArena(kind=kind, nbytes=side.arena.nbytes), (m.Ok,), self.timeouts.start_s,
                     "start-up", fds=[side.arena.fd])
            if self.ctx.cuda and self.cfg.gate and side.page is not None:
                try:
                    self.ask(side, m.MapGate(timeout_us=int(self.cfg.gate_timeout_ms * 1000), kernel_image=self.ctx.gate_image),
                             (m.Ok,), self.timeouts.start_s, "start-up", fds=[side.page_fd])
                    side.gated = True
                except WorkerFault as f:
                    if f.failure != FailureClass.HARNESS_ERROR:
                        raise
                    self.report.flags.append(f"{side.name}_gate_unavailable")

    def call(self, side: WorkerSide, args: tuple, expected: Any) -> tuple[inp.Placed, inp.Slots, dict]:
        """Place one call's arguments and output slots in a worker's arena (the caller
        resets the layout, and synchronizes before the worker may read them: the copies run
        on this judge's stream, and the worker reads on its own)."""
        assert side.arena is not None and side.layout is not None
        placed = inp.place(args, side.arena, side.layout)
        slots = inp.slots_for(expected, side.arena, side.layout)
        return placed, slots, {"args": placed.tree, "outs": slots.descs}

    def empty_calls(self, side: WorkerSide, k: int) -> list[dict]:
        """k calls for the stand-in (it reads nothing): on cuda one copy of the first trial's
        arguments that all of them name, and output slots of their own (a copy per call is 2.5 GB
        of copying per sample on each worker for the allreduce at 8192x8192, which the judge
        waits for before the half: py-spy, H100). On cpu a copy per call, as the calibrated
        floor is measured with."""
        assert side.arena is not None and side.layout is not None
        if not self.ctx.cuda:
            return [self.call(side, self.trial_args[0], self.trial_expected[0])[2] for _ in range(k)]
        args = inp.place(self.trial_args[0], side.arena, side.layout).tree
        return [{"args": args, "outs": inp.slots_for(self.trial_expected[0], side.arena, side.layout).descs}
                for _ in range(k)]

    def run_timed(self, side: WorkerSide, calls: list[dict], hold: bool, timeout_s: float,
                  calibrate: bool = False) -> TimedRun:
        """One timed run on a worker, the judge's clock around it: from the gate's opening
        (cuda; on cpu from the request) to the answer."""
        gated = self.ctx.cuda and side.gated and side.page is not None
        gen = 0
        if gated:
            side.gen += 1
            gen = side.gen
        expired0 = side.page.expired(self.ctx.rank) if gated and side.page is not None else 0
        self.ctx.scrub_l2()
        try:
            t_ready = side.link.send(m.Run(calls=calls, timed=True, gate_gen=gen, hold=hold, calibrate=calibrate,
                                           stage_back=self.stage_back and not calibrate))
            deadline = time.monotonic() + timeout_s
            t_open = t_ready
            if gated:
                q = side.link.receive((m.Queued,), deadline - time.monotonic(), self.phase)
                if q.gate_gen != gen:
                    raise WorkerFault(FailureClass.RUNTIME_ERROR,
                                      f"the worker broke the protocol: gate {q.gate_gen} != {gen}")
                assert side.page is not None
                t_open = side.page.open(self.ctx.rank, gen)
            done = side.link.receive((m.Done,), deadline - time.monotonic(), self.phase)
        except WorkerFault as f:
            if side is self.cand:
                raise
            raise WorkerFault(FailureClass.HARNESS_ERROR, f"the reference worker failed: {f.message}", f.log,
                              f.gone) from None
        t_done = side.link.reader.arrived  # the whole answer was here (a part sent early counts for nothing)
        if done.forbidden:
            raise WorkerFault(FailureClass.FORBIDDEN_API, f"{self.phase}: refused {', '.join(map(str, done.forbidden[:3]))}")
        if len(done.outputs) != len(calls):
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol: {len(done.outputs)} outputs for {len(calls)} calls")
        # This run's gate timeouts (the page counts them since the evaluation began).
        expired = (side.page.expired(self.ctx.rank) - expired0) if gated and side.page is not None else 0
        return TimedRun(done=done, reported_ms=float(done.event_ms), t_ready=t_ready, t_open=t_open, t_done=t_done,
                        expired=expired)

    def calibrate(self) -> None:
        """Before any code but the harness's exists in either worker: what a timed run of k
        calls that do nothing costs on the judge's clock (messages, gate, synchronize, the
        output copies). Both workers, alternately: the floor is one figure for both halves."""
        points: list[tuple[int, float]] = []
        sizes = sorted({min(k, self.calls_fit) for k in CALIBRATION_CALLS})
        if self.ctx.cuda:
            sizes = sorted({sizes[0], sizes[-1]})
        # Rounds over every batch size, the first one thrown away: a node's first evaluation
        # runs its first runs 40-70% slower (bench_eval, H100), and a floor fitted on them
        # sets that evaluation's figures apart from the next ones'. (cuda:
        # the first round at the most calls only, which does all that the least does.)
        runs = CALIBRATION_RUNS_CUDA if self.ctx.cuda else CALIBRATION_RUNS
        t0 = time.monotonic()
        for round_ in range(runs + 1):
            if round_ == 1:
                self.report.seconds["calibrate.first_round"] = time.monotonic() - t0
            for k in (sizes[-1:] if self.ctx.cuda and not round_ else sizes):
                for side in self.sides:
                    assert side.layout is not None
                    side.layout.reset()
                    calls = self.empty_calls(side, k)
                    t_ask = time.perf_counter()
                    r = self.run_timed(side, calls, hold=True, timeout_s=self.timeouts.start_s, calibrate=True)
                    if round_:
                        points.append((k, (r.t_done - r.t_open) * 1e3))
                    else:  # where the first round's time goes: the judge's part before the
                        # request (L2 scrub, its copies), the worker queueing, the window
                        for part, sec in (("ask", r.t_ready - t_ask), ("queue", r.t_open - r.t_ready),
                                          ("window", r.t_done - r.t_open)):
                            key = f"calibrate.first_{part}"
                            self.report.seconds[key] = self.report.seconds.get(key, 0.0) + sec
        self.floor_fit = fit_floor(points)
        self.floor_ms = {k: self.floor(k) for k in sorted({k for k, _ in points})}

    def floor(self, k: int) -> float:
        """The calibrated floor of a run of k calls: a fixed part (messages, synchronize) and a
        part per call (copying its outputs)."""
        fixed, per_call = self.floor_fit
        return fixed + per_call * k

    def load(self) -> None:
        self.ask(self.cand, m.Load(source=self.req.candidate_source), (m.Ok,), self.timeouts.load_s,
                 "loading the candidate")
        self.report.compiled = True
        if self.ref is not None:
            # Not overlapped with the candidate's trials: on the one core both workers share,
            # the candidate's ranks yielding, that saves nothing measurable (load 0.45-0.60 s
            # against 0.55-0.62 s, H100), and two workers' first calls at once on one GPU make
            # a peak of memory that neither makes alone.
            self.ask(self.ref, m.Load(source=self.problem.reference_source), (m.Ok,), self.timeouts.load_s,
                     "loading the reference")
            # One untimed call, as the candidate's first trial is: a first call pays for
            # lazy set-up (NCCL builds its communicator there, hundreds of ms), which would
            # hold a gate past its timeout and leave both halves timed ungated.
            assert self.ref.layout is not None
            self.ref.layout.reset()
            call = self.call(self.ref, self.trial_args[0], self.trial_expected[0])[2]
            self.sync()
            self.ask(self.ref, m.Run(calls=[call], timed=False, gate_gen=0, stage_back=self.stage_back),
                     (m.Done,), self.timeouts.trial_s, "the reference's first call")

    def check_output(self, tree: Any, slots: inp.Slots, expected: Any, written: inp.Written, placed: inp.Placed,
                     what: str, trial: int) -> bool:
        assert self.cand.arena is not None
        try:
            out = inp.rebuild(tree, slots, expected, self.cand.arena)
        except m.ProtocolError as e:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol: {e}") from None
        v = comparator.compare(out, expected, self.atol, self.rtol, self.problem.spec.ranked_outputs, self.ranked_step)
        if not v.ok:
            assert v.failure is not None
            self.fail(v.failure, f"{what}: {v.message}", trial=trial, max_abs_error=v.max_abs_error)
            return False
        self.worst = max(self.worst, v.max_abs_error or 0.0)
        why = placed.not_as_written(written, self.atol, self.rtol)
        if why:
            self.fail(FailureClass.INCORRECT, f"{what}: {why}", trial=trial)
            return False
        return True

    def trial(self, t: int) -> None:
        assert self.cand.layout is not None
        self.cand.layout.reset()
        placed, slots, call = self.call(self.cand, self.trial_args[t], self.trial_expected[t])
        self.sync()
        done = self.cand.link.ask(m.Run(calls=[call], timed=False, gate_gen=0, stage_back=self.stage_back),
                                  (m.Done,), self.timeouts.trial_s, f"trial {t}")
        if done.forbidden:
            raise WorkerFault(FailureClass.FORBIDDEN_API, f"trial {t}: refused {', '.join(map(str, done.forbidden[:3]))}")
        if len(done.outputs) != 1:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, "the worker broke the protocol: one output per call")
        self.check_output(done.outputs[0], slots, self.trial_expected[t], self.trial_written[t], placed,
                          f"trial {t}", t)
