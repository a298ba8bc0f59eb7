"""Time a reference on this rank's GPU with CUDA events (CUDA ranks only; nothing here runs
on import).

- `time_calls`: back-to-back calls, each after L2 is flushed, the device synchronised and
  every rank has met at a host barrier; one event pair around each call. Every rank makes
  the same number of calls (agreed on the host): each call is a collective.
- `queued_calls`: the same calls issued while the GPU sleeps (torch.cuda._sleep), timed
  from the sleep's end. The host's launches are then already queued, so the events time the
  GPU alone; when that is much shorter than `time_calls`' figure, the host's launch rate
  sets the time: the problem is launch-bound at this size. If the sleep is over before the
  call returns, the host waited on the GPU inside the call (a `.item()`, a `.cpu()`, a
  blocking collective): the queued figure then says nothing and `host_waited` is set.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from pkb_ray.selfcheck.audit.records import AuditPlan, CallTimes, QueuedTimes

WARMUP_CALLS = 2
"""The first call of a collective shape may build NCCL state; two leave it warm."""
SLEEP_CALIBRATION_CYCLES = 1_000_000
MAX_SLEEP_MS = 200.0

_cycles_per_ms: float | None = None
_flush_buffers: dict[int, torch.Tensor] = {}


def _flush_l2(device: torch.device) -> None:
    """Overwrite twice the L2's bytes so the next call reads its inputs from HBM, as a call
    in a real step would (the engine's timing rotates inputs for the same reason)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    buf = _flush_buffers.get(index)
    if buf is None:
        l2 = int(getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0) or (64 << 20))
        buf = _flush_buffers[index] = torch.empty(2 * l2, dtype=torch.uint8, device=device)
    buf.zero_()


def time_calls(fn: Callable[..., Any], args: tuple, plan: AuditPlan, barrier: Callable[[], None],
               agree_max: Callable[[float], float], device: torch.device) -> CallTimes:
    """CUDA event time and host issue time of each call (see the module docstring)."""
    for _ in range(WARMUP_CALLS):
        barrier()
        fn(*args)
    torch.cuda.synchronize()
    probe = _timed_call(fn, args, barrier, device)[0]
    # every rank makes as many calls as the slowest rank's estimate allows
    slowest_ms = agree_max(probe)
    calls = int(min(plan.max_calls, max(plan.min_calls, plan.timing_budget_s * 1e3 / max(slowest_ms, 1e-3))))
    events, host = [], []
    for _ in range(calls):
        ev, hs = _timed_call(fn, args, barrier, device)
        events.append(ev)
        host.append(hs)
    return CallTimes(tuple(events), tuple(host))


def _timed_call(fn, args, barrier, device) -> tuple[float, float]:
    _flush_l2(device)
    torch.cuda.synchronize()
    barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    fn(*args)
    host_ms = (time.perf_counter() - t0) * 1e3
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end), host_ms


def _sleep_cycles_per_ms() -> float:
    global _cycles_per_ms
    if _cycles_per_ms is None:
        torch.cuda._sleep(SLEEP_CALIBRATION_CYCLES)  # first launch loads the kernel
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(SLEEP_CALIBRATION_CYCLES)
        end.record()
        torch.cuda.synchronize()
        _cycles_per_ms = SLEEP_CALIBRATION_CYCLES / max(start.elapsed_time(end), 1e-3)
    return _cycles_per_ms


def queued_calls(fn: Callable[..., Any], args: tuple, calls: int, host_ms: float, barrier: Callable[[], None],
                 agree_max: Callable[[float], float], device: torch.device) -> QueuedTimes:
    """Calls issued behind a sleeping kernel long enough to cover the host's issue time
    (twice the median host time plus 1 ms, the same on every rank)."""
    sleep_ms = min(MAX_SLEEP_MS, agree_max(2 * host_ms + 1.0))
    cycles = int(sleep_ms * _sleep_cycles_per_ms())
    times, waited = [], False
    for _ in range(calls):
        _flush_l2(device)
        torch.cuda.synchronize()
        barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        start.record()
        fn(*args)
        # done already: the GPU left the sleep before the host finished issuing the call
        waited = waited or start.query()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return QueuedTimes(tuple(times), waited, sleep_ms)


def median(xs: tuple[float, ...] | list[float]) -> float | None:
    return statistics.median(xs) if xs else None
