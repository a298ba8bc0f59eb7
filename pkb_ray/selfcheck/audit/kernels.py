"""What the GPU ran for a reference call, from torch.profiler (CUPTI): kernel names and
durations, the device's busy time, and the profiler's own FLOP count.

`profile_calls` runs in a CUDA rank; `summarise_trace` reads the Chrome trace the profiler
exports (a stable format: `traceEvents`, each with `cat`, `name`, `ts` and `dur` in
microseconds) and is plain Python, so it is tested on CPU.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Callable

from pkb_ray.selfcheck.audit.records import KernelSummary

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
TOP_KERNELS = 3


def profile_calls(fn: Callable[..., Any], args: tuple, calls: int,
                  barrier: Callable[[], None]) -> tuple[KernelSummary | None, str]:
    """(the summary, "") or (None, why not). The calls are made whatever the profiler does:
    each is a collective, and a rank whose profiler failed to start must still make them,
    or its peers wait in the first one forever."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    prof, why = None, ""
    try:
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_flops=True)
        prof.__enter__()
    except Exception as exc:  # noqa: BLE001 - CUPTI unavailable or held by another tool
        prof, why = None, f"profiler did not start: {type(exc).__name__}: {str(exc)[:160]}"
    for _ in range(calls):
        barrier()
        fn(*args)
        torch.cuda.synchronize()
    if prof is None:
        return None, why
    fd, path = tempfile.mkstemp(suffix=".json", prefix="pkb_audit_trace_")
    os.close(fd)
    try:
        prof.__exit__(None, None, None)
        flops = sum(float(e.flops or 0) for e in prof.key_averages())
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        return summarise_trace(trace, calls, flops / max(calls, 1)), ""
    except Exception as exc:  # noqa: BLE001
        return None, f"profiler failed: {type(exc).__name__}: {str(exc)[:160]}"
    finally:
        os.unlink(path)


def summarise_trace(trace: dict | list, calls: int, profiler_flops: float = 0.0) -> KernelSummary:
    """Per call: the union of the device's busy intervals, the summed kernel time, NCCL's
    kernel time, the kernel count and the longest kernels."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    spans: list[tuple[float, float]] = []
    kernel_us = nccl_us = 0.0
    kernels = 0
    by_name: dict[str, float] = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in DEVICE_CATEGORIES:
            continue
        ts, dur = float(e.get("ts", 0.0)), float(e.get("dur", 0.0))
        spans.append((ts, ts + dur))
        if e.get("cat") == "kernel":
            name = str(e.get("name", "?"))
            kernels += 1
            kernel_us += dur
            if name.lower().startswith("nccl"):
                nccl_us += dur
            by_name[name] = by_name.get(name, 0.0) + dur
    busy_us, last_end = 0.0, float("-inf")
    for lo, hi in sorted(spans):
        if hi > last_end:
            busy_us += hi - max(lo, last_end)
            last_end = hi
    n = max(calls, 1)
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:TOP_KERNELS]
    return KernelSummary(calls=calls, busy_ms=busy_us / 1e3 / n, kernel_ms=kernel_us / 1e3 / n,
                         nccl_ms=nccl_us / 1e3 / n, kernels=round(kernels / n),
                         top=tuple(f"{_short(name)}: {us / 1e3 / n:.4f} ms" for name, us in top),
                         profiler_flops=profiler_flops)


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."
