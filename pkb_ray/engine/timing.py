"""Timing one callable identically for candidate and reference, on every rank.

One call, on each rank: a harness barrier, then
  cuda: a CUDA event pair on the current stream around the call, then
        torch.cuda.synchronize() (waits for every stream, so work a candidate hides on a
        side stream is still counted) and a host clock around the whole;
  cpu:  the host clock around the call.
The call's time on a rank is max(event time, host time - host overhead), where the host
overhead is the median host time of an empty call measured the same way; the call's time
is the slowest rank's. The reported time is the median over calls.

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
    """Slowest rank's time of every timed call, in call order."""


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
    """Makes one timed call on this rank."""

    def __init__(self, device: str, barrier: Barrier) -> None:
        self.cuda = device.startswith("cuda")
        self.barrier = barrier
        if self.cuda:
            self.start = _Event(enable_timing=True)
            self.end = _Event(enable_timing=True)
        self.host_overhead_ms = 0.0

    def call(self, fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, float]:
        self.barrier()
        if self.cuda:
            _cuda_synchronize()
            h0 = _perf_counter()
            _event_record(self.start, _current_stream())
            out = fn(*inputs)
            _event_record(self.end, _current_stream())
            _cuda_synchronize()
            h1 = _perf_counter()
            event_ms = _event_elapsed(self.start, self.end)
            host_ms = (h1 - h0) * 1e3
            return out, max(event_ms, host_ms - self.host_overhead_ms)
        h0 = _perf_counter()
        out = fn(*inputs)
        h1 = _perf_counter()
        return out, (h1 - h0) * 1e3

    def calibrate(self) -> None:
        """Host time of an empty call (events + synchronize), subtracted from host times."""
        if not self.cuda:
            return
        samples = []
        for _ in range(20):
            _cuda_synchronize()
            h0 = _perf_counter()
            _event_record(self.start, _current_stream())
            _event_record(self.end, _current_stream())
            _cuda_synchronize()
            samples.append((_perf_counter() - h0) * 1e3)
        self.host_overhead_ms = statistics.median(samples)


def time_calls(fn: Callable[..., Any], input_sets: Sequence[Sequence[Any]], cfg: TimingConfig, *,
               device: str, barrier: Barrier, gather: Gather) -> tuple[TimingStats, _Caller]:
    """Time `fn` over `input_sets` (call i uses set i % len) on every rank of the group.

    Returns the stats (identical on every rank) and the caller, whose `.call` makes one more
    call timed the same way (the harness checks that call's output)."""
    caller = _Caller(device, barrier)
    caller.calibrate()
    overheads = gather([caller.host_overhead_ms])
    caller.host_overhead_ms = min(o[0] for o in overheads)  # the same on every rank
    t_begin = _perf_counter()
    n_sets = len(input_sets)
    i = 0

    def run(n: int) -> list[float]:
        nonlocal i
        times = []
        for _ in range(n):
            _, ms = caller.call(fn, input_sets[i % n_sets])
            i += 1
            times.append(ms)
        return times

    def gathered_max(local: list[float]) -> tuple[list[float], float]:
        elapsed = _perf_counter() - t_begin
        rows = gather(local + [elapsed])
        per_call = [max(r[j] for r in rows) for j in range(len(local))]
        return per_call, max(r[-1] for r in rows)

    # Warm up by time: one call tells how long a call takes, then enough calls for warmup_ms.
    first, _ = gathered_max(run(1))
    warm = min(1000, max(0, math.ceil(cfg.warmup_ms / max(first[0], 1e-3)) - 1))
    if warm:
        run(warm)
    samples: list[float] = []
    stopped = "max_calls"
    batch = max(1, cfg.min_calls)
    while True:
        batch = min(batch, cfg.max_calls - len(samples))
        per_call, elapsed_s = gathered_max(run(batch))
        samples += per_call
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
    stats = TimingStats(median_ms=statistics.median(samples), calls=len(samples),
                        warmup_calls=warm + 1, rel_ci=rel, stopped=stopped, input_sets=n_sets,
                        host_overhead_ms=caller.host_overhead_ms, per_call_ms=samples)
    return stats, caller


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
