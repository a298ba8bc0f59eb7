"""Timing one callable identically for candidate and reference, on every rank.

One call, on each rank: a harness barrier, then
  cuda: a CUDA event pair on the current stream around the call, then
        torch.cuda.synchronize() (waits for every stream, so work a candidate hides on a
        side stream is still counted) and a host clock around the whole;
  cpu:  the host clock around the call.
On cuda the ranks' streams are first aligned by a one-element NCCL all-reduce issued by
the harness (exempt from the guard), so every rank's start event fires at the same moment.
A call's time is the slowest rank's, on each clock; the reported time is the median over
calls of the event clock, or of the host clock (minus the measured overhead of an empty
call) when that is clearly larger: work on a side stream (see time_calls).

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
    """Makes one timed call on this rank; returns (output, event_ms, host_ms)."""

    def __init__(self, device: str, barrier: Barrier, device_barrier: Barrier | None = None) -> None:
        self.cuda = device.startswith("cuda")
        self.barrier = barrier
        self.device_barrier = device_barrier
        if self.cuda:
            self.start = _Event(enable_timing=True)
            self.end = _Event(enable_timing=True)
        self.host_overhead_ms = 0.0

    def _timed(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, float, float]:
        self.barrier()
        if self.cuda:
            _cuda_synchronize()
            h0 = _perf_counter()
            if self.device_barrier is not None:
                # Align the ranks' streams: the start events of all ranks fire together, so a
                # peer's late host does not count as this rank's kernel time (with a host
                # barrier alone, rank skew of tens of us is added to 15 us kernels).
                self.device_barrier()
            _event_record(self.start, _current_stream())
            out = fn(*inputs)
            _event_record(self.end, _current_stream())
            _cuda_synchronize()
            h1 = _perf_counter()
            return out, _event_elapsed(self.start, self.end), (h1 - h0) * 1e3
        h0 = _perf_counter()
        out = fn(*inputs)
        ms = (_perf_counter() - h0) * 1e3
        return out, ms, ms

    def call(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, float]:
        """One call timed like every timed call; returns (output, this rank's time in ms)."""
        out, event_ms, host_ms = self._timed(fn, inputs)
        return out, max(event_ms, host_ms - self.host_overhead_ms)

    def calibrate(self) -> None:
        """Host time of an empty call (barrier alignment + events + synchronize)."""
        if not self.cuda:
            return
        samples = [self._timed(_empty, ())[2] for _ in range(20)]
        self.host_overhead_ms = statistics.median(samples[5:])


def _empty() -> None:
    return None


# Host-clock medians above event medians by more than this mean work the events did not
# see (a side stream): then the host-clock median is reported.
HOST_CLOCK_TOLERANCE = 1.2
HOST_CLOCK_SLACK_MS = 0.02


def time_calls(fn: Callable[..., Any], input_sets: Sequence[Sequence[Any]], cfg: TimingConfig, *,
               device: str, barrier: Barrier, gather: Gather,
               device_barrier: Barrier | None = None) -> tuple[TimingStats, _Caller]:
    """Time `fn` over `input_sets` (call i uses set i % len) on every rank of the group.

    Per call and rank two clocks are read: CUDA events on the current stream, and the host
    clock around the call plus a device synchronize (minus the calibrated overhead of an
    empty call). A call's time on each clock is the slowest rank's. The events give the
    precise number; if the host-clock median exceeds the event median by more than 20% (+20
    us), work ran where the events could not see it (a side stream) and the host-clock
    median is reported instead (`clock` = "host"). On cpu both clocks are the host clock.

    Returns the stats (identical on every rank) and the caller, whose `.call` makes one more
    call timed the same way (the harness checks that call's output)."""
    caller = _Caller(device, barrier, device_barrier)
    caller.calibrate()
    overheads = gather([caller.host_overhead_ms])
    caller.host_overhead_ms = min(o[0] for o in overheads)  # the same on every rank
    t_begin = _perf_counter()
    n_sets = len(input_sets)
    i = 0

    def run(n: int) -> tuple[list[float], list[float]]:
        nonlocal i
        ev, host = [], []
        for _ in range(n):
            _, e, h = caller._timed(fn, input_sets[i % n_sets])
            i += 1
            ev.append(e)
            host.append(max(0.0, h - caller.host_overhead_ms))
        return ev, host

    def gathered_max(ev: list[float], host: list[float]) -> tuple[list[float], list[float], float]:
        n = len(ev)
        rows = gather(ev + host + [_perf_counter() - t_begin])
        ev_max = [max(r[j] for r in rows) for j in range(n)]
        host_max = [max(r[n + j] for r in rows) for j in range(n)]
        return ev_max, host_max, max(r[-1] for r in rows)

    # Warm up by time: one call tells how long a call takes, then enough calls for warmup_ms.
    ev1, host1, _ = gathered_max(*run(1))
    first = max(ev1[0], host1[0])
    warm = min(1000, max(0, math.ceil(cfg.warmup_ms / max(first, 1e-3)) - 1))
    if warm:
        run(warm)
    ev_samples: list[float] = []
    host_samples: list[float] = []
    stopped = "max_calls"
    batch = max(1, cfg.min_calls)
    while True:
        batch = min(batch, cfg.max_calls - len(ev_samples))
        ev, host, elapsed_s = gathered_max(*run(batch))
        ev_samples += ev
        host_samples += host
        samples = _pick(ev_samples, host_samples, cfg.clock)[0]
        rel = rel_ci_of_median(samples)
        if len(samples) >= cfg.min_calls and rel <= cfg.target_rel_ci:
            stopped = "stable"
            break
        if len(samples) >= cfg.max_calls:
            stopped = "max_calls"
            break
        if elapsed_s >= cfg.max_timing_s:
            stopped = "max_time"
            break
        batch = max(cfg.min_calls, len(samples) // 2)
    samples, clock = _pick(ev_samples, host_samples, cfg.clock)
    stats = TimingStats(median_ms=statistics.median(samples), calls=len(samples),
                        warmup_calls=warm + 1, rel_ci=rel, stopped=stopped, input_sets=n_sets,
                        host_overhead_ms=caller.host_overhead_ms, per_call_ms=samples, clock=clock,
                        event_median_ms=statistics.median(ev_samples),
                        host_median_ms=statistics.median(host_samples))
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
