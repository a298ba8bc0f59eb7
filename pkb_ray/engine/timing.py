"""Timing one callable identically for candidate and reference, on every rank.

One sample, on each rank (cuda, gated: the default):
  close the launch gate (launch_gate.py), record a CUDA event, make the call (short calls:
  several calls back to back on consecutive input sets, about TimingConfig.batch_ms of GPU
  work), record an event, open the gate, torch.cuda.synchronize() (waits for every
  stream). The GPU starts only when every rank has queued all of it, so the events hold
  the GPU's work alone: no host launch overhead, and the skew between the ranks' starts
  (about a microsecond) is shared by the batch. A sample is the time per call.
Ungated (no gate here, or the callable waits on the GPU from the host, which a closed gate
would hold until it times out): a harness barrier, a one-element NCCL all-reduce that
aligns the ranks' streams, then events and a synchronize around the call.
On cpu: the host clock around the call.

A call's time is the slowest rank's, on each clock; the reported time is the median over
calls of the event clock, or of the host clock (minus the host time of an empty call) when
that is clearly larger: work on a side stream (see time_calls).

Warm-up is by time (TimingConfig.warmup_ms); then calls repeat in batches until the
median's 95% confidence half-width (order statistics) is within target_rel_ci of it, or
max_calls / max_timing_s is reached. All ranks take the same decision from the same
gathered numbers, so they always make the same number of calls (a candidate with internal
barriers would hang otherwise).

The clocks are bound when this module is imported, before any candidate code runs, so a
candidate that patches time.perf_counter or torch.cuda.Event cannot change the numbers.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from pkb_ray.config.schema import TimingConfig

_perf_counter = time.perf_counter
_cuda_synchronize = torch.cuda.synchronize
_current_stream = torch.cuda.current_stream
_Event = torch.cuda.Event
_CudaEventBase = getattr(torch._C, "_CudaEventBase", None)
_event_record = getattr(_CudaEventBase, "record", None)
_event_elapsed = getattr(_CudaEventBase, "elapsed_time", None)

Barrier = Callable[[], None]
Gather = Callable[[list[float]], list[list[float]]]
"""Gather a list of floats from every rank (harness collective); returns one list per rank."""


@dataclass
class TimingStats:
    median_ms: float
    calls: int
    warmup_calls: int
    rel_ci: float
    """Relative 95% half-width of the median when timing stopped."""
    stopped: str
    """stable | max_calls | max_time."""
    input_sets: int
    host_overhead_ms: float = 0.0
    per_call_ms: list[float] = field(default_factory=list)
    """Slowest rank's time of every timed call, in call order (on the reported clock)."""
    clock: str = "event"
    """event | host: which clock the median comes from (host = work outside the events)."""
    event_median_ms: float = 0.0
    host_median_ms: float = 0.0
    gated: bool = False
    """Calls were held behind the launch gate (launch_gate.py) until every rank had queued them."""
    calls_per_sample: int = 1
    """Gated: calls queued back to back behind one gate; a sample is their time per call."""


def rel_ci_of_median(samples: Sequence[float]) -> float:
    """Relative half-width of a distribution-free 95% confidence interval of the median."""
    n = len(samples)
    if n < 3:
        return math.inf
    s = sorted(samples)
    med = statistics.median(s)
    if med <= 0:
        return math.inf
    k = 1.96 * math.sqrt(n) / 2
    lo = s[max(0, math.floor(n / 2 - k))]
    hi = s[min(n - 1, math.ceil(n / 2 + k))]
    return (hi - lo) / 2 / med


class _Caller:
    """Makes one call on this rank; returns (output, event_ms, start, end).

    start/end are perf_counter readings (CLOCK_MONOTONIC: one clock for all the node's
    processes). Ungated, start is taken after the harness barrier and end after the device
    synchronize. Gated, start is when this rank opened the gate (the gate really opens at
    the latest rank's start) and end after the synchronize."""

    def __init__(self, device: str, barrier: Barrier, device_barrier: Barrier | None = None,
                 gate: Any = None) -> None:
        self.cuda = device.startswith("cuda")
        self.barrier = barrier
        self.device_barrier = device_barrier
        self.gate = gate if self.cuda else None
        if self.gate is not None:  # bound now: candidate code comes later
            self._gate_close, self._gate_open, self._gate_expired = gate.close, gate.open, gate.expired
        self.gated = False
        if self.cuda:
            self.start = _Event(enable_timing=True)
            self.end = _Event(enable_timing=True)
        self.host_overhead_ms = 0.0
        """Host time of an empty call in the current mode (set by time_calls)."""

    def _timed(self, fn: Callable[..., Any], inputs: Sequence[Any],
               more: Sequence[Sequence[Any]] = ()) -> tuple[Any, float, float, float]:
        """One call on `inputs`; gated, then one more call on each of `more`, back to back
        (the event time is then the whole batch's: time_calls divides)."""
        if self.gated:
            # The previous call ended with a synchronize, so the gate is the next thing the
            # GPU runs; everything fn queues waits behind it (launch_gate.py).
            self._gate_close()
            _event_record(self.start, _current_stream())
            out = fn(*inputs)
            for extra in more:
                out = fn(*extra)
            _event_record(self.end, _current_stream())
            t0 = self._gate_open()
            _cuda_synchronize()
            t1 = _perf_counter()
            return out, _event_elapsed(self.start, self.end), t0, t1
        assert not more, "only gated calls are batched"
        self.barrier()
        if self.cuda:
            _cuda_synchronize()
            t0 = _perf_counter()
            if self.device_barrier is not None:
                # Align the ranks' streams: the start events of all ranks fire together, so a
                # peer's late host does not count as this rank's kernel time.
                self.device_barrier()
            _event_record(self.start, _current_stream())
            out = fn(*inputs)
            _event_record(self.end, _current_stream())
            _cuda_synchronize()
            t1 = _perf_counter()
            return out, _event_elapsed(self.start, self.end), t0, t1
        t0 = _perf_counter()
        out = fn(*inputs)
        t1 = _perf_counter()
        return out, (t1 - t0) * 1e3, t0, t1

    def call(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, float]:
        """One call made like every timed call; returns (output, this rank's time in ms)."""
        out, event_ms, t0, t1 = self._timed(fn, inputs)
        return out, max(event_ms, (t1 - t0) * 1e3 - self.host_overhead_ms)

    def expired(self) -> int:
        return self._gate_expired() if self.gate is not None else 0


def _empty() -> None:
    return None


# Host-clock medians above event medians by more than this mean work the events did not
# see (a side stream): then the host-clock median is reported.
HOST_CLOCK_TOLERANCE = 1.2
HOST_CLOCK_SLACK_MS = 0.02
# Gated calls between two checks that the gate held: a callable that waits on the GPU from
# the host costs one gate timeout per call until the next check.
GATED_BATCH_MAX = 32
# Calls queued behind one gate: bounded so the launch queue (about a thousand entries)
# never fills, which would block the host against the closed gate.
MAX_PER_SAMPLE = 64


@dataclass
class _Batch:
    event_ms: list[float]
    """Per call, the slowest rank's event time."""
    host_ms: list[float]
    """Per call, host time from the (latest) start to the last rank's end, minus overhead."""
    elapsed_s: float
    expired: bool
    """A gate timed out on some rank during the batch."""


def time_calls(fn: Callable[..., Any], input_sets: Sequence[Sequence[Any]], cfg: TimingConfig, *,
               device: str, barrier: Barrier, gather: Gather,
               device_barrier: Barrier | None = None, gate: Any = None) -> tuple[TimingStats, _Caller]:
    """Time `fn` over `input_sets` (call i uses set i % len) on every rank of the group.

    On cuda with a `gate` (launch_gate.LaunchGate) and cfg.gate, calls are gated: the GPU
    starts the call only once every rank has queued all of it, so the events measure the
    GPU's work and not the host's launch overhead or rank skew. If a gate times out (the
    callable waits on the GPU from the host), timing starts again without the gate (the
    stats say which: `gated`).

    Per call two clocks are read: CUDA events on the current stream, and the host clock
    from start to the last rank's device synchronize (minus the same for an empty call). A
    call's event time is the slowest rank's. The events give the precise number; if the
    host-clock median exceeds the event median by more than 20% (+20 us), work ran where
    the events could not see it (a side stream; the gate holds every SM, so such work
    cannot finish before the gate opens) and the host-clock median is reported instead
    (`clock` = "host"). On cpu both clocks are the host clock.

    Returns the stats (identical on every rank) and the caller, whose `.call` makes one more
    call timed the same way (the harness checks that call's output)."""
    caller = _Caller(device, barrier, device_barrier, gate if cfg.gate else None)
    t_begin = _perf_counter()
    n_sets = len(input_sets)
    i = 0

    per_sample = 1  # calls per sample: > 1 only gated (see below)

    def run(f: Callable[..., Any], n: int, rotate: bool = True) -> _Batch:
        """n samples of `per_sample` back-to-back calls each; times per call."""
        nonlocal i
        ev, starts, ends = [], [], []
        expired0 = caller.expired()
        k = per_sample if caller.gated else 1
        for _ in range(n):
            if rotate:
                sets = [input_sets[(i + j) % n_sets] for j in range(k)]
                i += k
            else:
                sets = [()] * k
            _, e, t0, t1 = caller._timed(f, sets[0], sets[1:])
            ev.append(e / k)
            starts.append(t0)
            ends.append(t1)
        rows = gather(ev + starts + ends + [_perf_counter() - t_begin, float(caller.expired() > expired0)])
        ev_max = [max(r[j] for r in rows) for j in range(n)]
        if caller.gated:
            host = [(max(r[2 * n + j] for r in rows) - max(r[n + j] for r in rows)) * 1e3 for j in range(n)]
        else:
            host = [max((r[2 * n + j] - r[n + j]) for r in rows) * 1e3 for j in range(n)]
        host = [max(0.0, h - caller.host_overhead_ms) / k for h in host]
        return _Batch(ev_max, host, max(r[-2] for r in rows), any(r[-1] > 0 for r in rows))

    def calibrate() -> None:
        caller.host_overhead_ms = 0.0
        b = run(_empty, 20, rotate=False)
        if b.expired:  # a host descheduled for a whole gate timeout: no trustworthy overhead
            caller.gated = False
            b = run(_empty, 20, rotate=False)
        caller.host_overhead_ms = statistics.median(b.host_ms[5:])

    def warm_up(first_ms: float) -> int:
        """Samples for cfg.warmup_ms; a negative count means a gate timed out (and stopped it)."""
        k = per_sample if caller.gated else 1
        n = min(1000, max(0, math.ceil(cfg.warmup_ms / max(first_ms * k, 1e-3))))
        done = 0
        while done < n:
            m = min(n - done, GATED_BATCH_MAX if caller.gated else n)
            b = run(fn, m)
            done += m
            if b.expired:
                return -done * k
        return done * k

    calibrate()
    # The first call is never gated: lazy initialisation (an NCCL communicator, a cache)
    # waits on the device from the host. It also says how long a call takes.
    b1 = run(fn, 1)
    first = max(b1.event_ms[0], b1.host_ms[0])
    warm = 1
    w = 0
    if caller.gate is not None:
        caller.gated = True
        calibrate()
        probe = run(fn, 3) if caller.gated else None
        warm += 3
        if probe is not None and not probe.expired:
            # Back to back behind one gate, as nccl-tests times collectives: what is left
            # of the skew between the ranks' starts is shared by the batch's calls.
            one = statistics.median(max(e, h) for e, h in zip(probe.event_ms, probe.host_ms))
            per_sample = max(1, min(MAX_PER_SAMPLE, math.ceil(cfg.batch_ms / max(one, 1e-3))))
            w = warm_up(one)
            warm += abs(w)
            if w < 0 and per_sample > 1:
                # A batch can fill the launch queue and block the host against the gate:
                # one call per sample before giving the gate up.
                per_sample = 1
                w = warm_up(one)
                warm += abs(w)
        if not caller.gated or probe is None or probe.expired or w < 0:
            caller.gated = False
            calibrate()
            warm += warm_up(first)
    else:
        warm += warm_up(first)
    ev_samples: list[float] = []
    host_samples: list[float] = []
    stopped = "max_calls"
    batch = max(1, cfg.min_calls)
    rel = math.inf
    while True:
        batch = min(batch, cfg.max_calls - len(ev_samples))
        if caller.gated:
            batch = min(batch, GATED_BATCH_MAX)
        b = run(fn, batch)
        if b.expired and caller.gated:
            # The gate held a call back until it timed out: those times are wrong. Start
            # over without the gate.
            caller.gated = False
            calibrate()
            ev_samples, host_samples = [], []
            batch = max(1, cfg.min_calls)
            continue
        ev_samples += b.event_ms
        host_samples += b.host_ms
        samples = _pick(ev_samples, host_samples, cfg.clock)[0]
        rel = rel_ci_of_median(samples)
        if len(samples) >= cfg.min_calls and rel <= cfg.target_rel_ci:
            stopped = "stable"
            break
        if len(samples) >= cfg.max_calls:
            stopped = "max_calls"
            break
        if b.elapsed_s >= cfg.max_timing_s:
            stopped = "max_time"
            break
        batch = max(cfg.min_calls, len(samples) // 2)
    samples, clock = _pick(ev_samples, host_samples, cfg.clock)
    k = per_sample if caller.gated else 1
    stats = TimingStats(median_ms=statistics.median(samples), calls=len(samples) * k,
                        warmup_calls=warm, rel_ci=rel, stopped=stopped, input_sets=n_sets,
                        host_overhead_ms=caller.host_overhead_ms, per_call_ms=samples, clock=clock,
                        event_median_ms=statistics.median(ev_samples),
                        host_median_ms=statistics.median(host_samples), gated=caller.gated,
                        calls_per_sample=k)
    return stats, caller


def _pick(ev: list[float], host: list[float], clock: str = "auto") -> tuple[list[float], str]:
    if clock == "event":
        return ev, "event"
    if clock == "host":
        return host, "host"
    if clock == "max":
        # Per call, not per median: no threshold to land on either side of between runs.
        return [max(e, h) for e, h in zip(ev, host)], "max"
    if statistics.median(host) > HOST_CLOCK_TOLERANCE * statistics.median(ev) + HOST_CLOCK_SLACK_MS:
        return host, "host"
    return ev, "event"


def input_sets_for_cold_l2(make_set: Callable[[int], Sequence[Any]], first: Sequence[Any],
                           l2_bytes: int, max_bytes: int = 1 << 30, max_sets: int = 64) -> list:
    """Input sets to rotate through so each call starts with its inputs out of L2.

    When one set is smaller than the L2, rotate through enough sets to cover twice the L2
    (H100: 50 MB; a 1024x1024 bf16 set is 2 MB -> 51 sets), bounded by max_bytes."""
    nbytes = sum(t.numel() * t.element_size() for t in first if isinstance(t, torch.Tensor))
    if l2_bytes <= 0 or nbytes == 0 or nbytes >= l2_bytes:
        return [first]
    n = min(max_sets, math.ceil(2 * l2_bytes / nbytes) + 1, max(1, max_bytes // nbytes))
    return [first] + [make_set(k) for k in range(1, n)]
