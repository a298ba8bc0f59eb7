"""One Run request on the worker: build each call's arguments from the arena, make the
calls (timed or not), copy each call's outputs into the slots the judge named.

The times this returns are the worker's own report (CUDA events on cuda, the host clock on
cpu). The judge bounds them with its own clock; nothing here is trusted by anyone.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from pkb_ray.engine.wire import trees
from pkb_ray.engine.wire.arena import Arena, fill
from pkb_ray.engine.worker.groups import group_for

_perf_counter = time.perf_counter
_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_copy = torch.Tensor.copy_
_foreach_copy_ = getattr(torch, "_foreach_copy_", None)


@dataclass
class Staged:
    """Arguments of one call, and (host arena on cuda) the device copies to copy back."""
    args: tuple
    back: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)


def build_args(call: dict, arena: Arena, device: str) -> Staged:
    staged = Staged(())
    stage = arena.kind == "host" and device.startswith("cuda")

    def tensor(p: dict) -> torch.Tensor:
        view = arena.view(p["off"], trees.dtype_of(p["dtype"]), p["shape"], p.get("stride"))
        if not stage:
            return view
        dev = torch.empty_strided(view.shape, view.stride(), dtype=view.dtype, device=device)
        fill(dev, view)
        staged.back.append((view, dev))
        return dev

    staged.args = tuple(trees.decode(call["args"], tensor, group_for))
    return staged


@dataclass
class Delivery:
    """Where every output goes: planned as soon as the calls have returned on the host (their
    work may still be queued), carried out after the device synchronize. The planning is
    Python, tens of microseconds per call: kept out of the judge's window, where it would
    dwarf a launch-bound call and weigh the same on both halves (a ratio pulled to 1)."""
    trees: list[Any]
    dsts: list[torch.Tensor] = field(default_factory=list)
    srcs: list[torch.Tensor] = field(default_factory=list)
    slow: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)

    queued: bool = False

    def queue(self) -> None:
        """The copies from device to the same device, queued now behind the calls (one
        foreach launch). The synchronize then waits for calls and copies together: launched
        after it, the copies cost a launch and a second synchronize inside the judge's window
        (the floor of 64 empty calls at 1024x1024 reads 0.8 ms for 0.2 ms of copying so, on
        an H100). A result still being written on a stream of the candidate's own, not
        joined to the current one, is copied as it stands: the candidate's race, as for any
        PyTorch code that reads its result. Copies that involve the host wait for the device
        from the host, behind a closed gate: they stay after the synchronize."""
        if self.dsts and self.dsts[0].is_cuda:
            _foreach_copy(self.dsts, self.srcs)
            self.queued = True

    def copy(self) -> None:
        """Whatever queue() left: together (one foreach launch per device), then the rest."""
        if self.dsts and not self.queued:
            _foreach_copy(self.dsts, self.srcs)
        for dst, src in self.slow:
            _copy(dst, src)


def plan_delivery(outs: list[Any], calls: list[dict], arena: Arena) -> Delivery:
    """Every call's output tree; tensor leaf i of call j goes to that call's slot i when it
    fits."""
    plan = Delivery([])
    for out, call in zip(outs, calls):
        slots = call["outs"]
        index = 0

        def tensor(t: torch.Tensor) -> dict:
            nonlocal index
            i, index = index, index + 1
            plain = type(t) is torch.Tensor
            dtype = str(t.dtype).removeprefix("torch.")
            meta = {"slot": i, "shape": list(t.shape), "dtype": dtype, "device": str(t.device),
                    "plain": plain, "copied": False}
            if plain and i < len(slots):
                s = slots[i]
                if meta["shape"] == s["shape"] and dtype == s["dtype"]:
                    dst = arena.view(s["off"], trees.dtype_of(s["dtype"]), s["shape"])
                    src = t.detach()
                    if src.device == dst.device and src.is_contiguous():
                        plan.dsts.append(dst)
                        plan.srcs.append(src)
                    else:
                        plan.slow.append((dst, src))
                    meta["copied"] = True
            return meta

        if type(out) is torch.Tensor:  # the common case, without the generic walk
            plan.trees.append({"T": tensor(out)})
        else:
            plan.trees.append(trees.encode(out, tensor, strict=False))
    return plan


def _foreach_copy(dsts: list[torch.Tensor], srcs: list[torch.Tensor]) -> None:
    if _foreach_copy_ is not None:
        _foreach_copy_(dsts, srcs)
    else:
        for d, s in zip(dsts, srcs):
            _copy(d, s)


@dataclass
class RunResult:
    outputs: list
    event_ms: float = 0.0
    host_ms: float = 0.0
    started_at: float = 0.0


def run_calls(fn: Callable[..., Any], calls: list[dict], arena: Arena, device: str, *, timed: bool,
              gate: Any, gate_gen: int, hold: bool, say_queued: Callable[[int], None],
              stage_back: bool, planned: Callable[[list], None] = lambda trees: None) -> RunResult:
    """Make the calls; see messages.Run for the request's fields. `planned` gets the output
    trees as soon as they are known: on cuda, before the gate opens, so that the answer's
    encoding is not part of the judge's window."""
    cuda = device.startswith("cuda")
    staged = [build_args(c, arena, device) for c in calls]
    if cuda:
        _synchronize()  # staging copies (host arena) are not part of any call
    outs: list[Any] = []
    event_ms = host_ms = 0.0
    started = _perf_counter()
    plan: Delivery | None = None
    if timed and cuda:
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        if gate is not None and gate_gen:
            gate.close(gate_gen)
            if not hold:
                say_queued(gate_gen)  # the gate only lines the ranks up: calls go after it
        start.record()
        for s in staged:
            outs.append(fn(*s.args))
        end.record()
        plan = plan_delivery(outs, calls, arena)
        plan.queue()
        planned(plan.trees)
        t0 = _perf_counter()
        if gate is not None and gate_gen and hold:
            say_queued(gate_gen)
        _synchronize()
        host_ms = (_perf_counter() - t0) * 1e3
        event_ms = start.elapsed_time(end)
    elif timed:
        t0 = _perf_counter()
        for s in staged:
            outs.append(fn(*s.args))
        event_ms = host_ms = (_perf_counter() - t0) * 1e3
        started = t0
    else:
        for s in staged:
            outs.append(fn(*s.args))
        if cuda:
            _synchronize()  # asynchronous CUDA errors belong to this call
    if plan is None:
        plan = plan_delivery(outs, calls, arena)
        planned(plan.trees)
    plan.copy()
    trees_out = plan.trees
    if stage_back:
        for s in staged:
            for view, dev in s.back:
                fill(view, dev)
    if cuda:
        _synchronize()
    return RunResult(trees_out, event_ms, host_ms, started)


WARM_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.complex64, torch.int64,
               torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)


def warm_up(device: str) -> None:
    """What a timed run uses for the first time, used once at set-up (before the evaluation
    where the sandbox was started ahead of it): events, and the copy kernels that deliver
    outputs, for the usual dtypes. CUDA loads a kernel at its first launch (lazy loading),
    and a load waits for the context's running kernels: behind a held gate, which runs until
    the judge opens it, the first launch of a kernel not yet loaded waits for the gate's
    timeout. Without this the first calibration run on each worker takes 0.21-0.24 s, the
    next ones a few ms (calibrate.first_queue, H100): 0.1 s per worker is the gate's
    timeout. moe_dispatch's takes 0.026 s: its outputs differ in dtype, which foreach copies
    one by one (no kernel). Both of foreach's routes are loaded here: the fast one (contiguous
    lists of one dtype, one multi-tensor kernel) and the slow one (a copy per tensor)."""
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    start.record()
    for dtype in WARM_DTYPES:
        src = torch.zeros((4, 4), dtype=dtype, device=device)
        dst = torch.empty_like(src)
        _foreach_copy([dst, torch.empty_like(src)], [src, torch.zeros_like(src)])  # fast route
        _foreach_copy([dst, dst.t()], [src, src])  # slow route
        _copy(dst.t(), src)
    end.record()
    _synchronize()
    start.elapsed_time(end)


PACE_KERNELS = 64
PACE_ROUNDS = 5
PACE_SLEEP_CYCLES = 2_000_000
"""About 1 ms at 1.98 GHz: long enough for the host to queue the kernels behind it."""


def context_pace_us(device: str) -> float:
    """GPU time per kernel of PACE_KERNELS small copies queued behind a sleeping kernel (as
    timed calls queue behind the gate), the median of PACE_ROUNDS: how fast this process's
    CUDA context dispatches kernels. It differs between processes and holds for a process's
    life: on one H200 each fresh process timed 64 held 2 MiB copies at 0.241 or 0.249 ms
    (a mode drawn at random, not by CPU or memory placement) and steady within 0.6% over
    6 s; matmuls moved with it (scripts/device/placement_probe.py; benchmarks/results/
    s18_2026-11-29/, g8-g11). Measured at set-up, before any candidate code exists in the
    process; evidence only."""
    src = torch.zeros(64 * 1024, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    times = []
    for _ in range(PACE_ROUNDS):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        torch.cuda._sleep(PACE_SLEEP_CYCLES)
        start.record()
        for _ in range(PACE_KERNELS):
            _copy(dst, src)
        end.record()
        _synchronize()
        times.append(start.elapsed_time(end) * 1e3 / PACE_KERNELS)
    return sorted(times)[len(times) // 2]


def stand_in(calls: list[dict], device: str) -> Callable[..., Any]:
    """Before the candidate is loaded: a callable that does no work and returns tensors of
    the expected outputs' shapes, so the judge can measure what a run costs besides the
    calls themselves (messages, gate, synchronize, the output copies)."""
    # Zeros, made before the gate: the calibration copies them into the output slots, and a
    # candidate that leaves a slot as it found it then reads as wrong, never as whatever
    # memory held (NaN in 7 of 10 runs of scans_gc and forges_done, a clean incorrect in 10
    # of 10 so). On cuda, outputs of their own for each call, as real calls return: one set
    # copied k times can be read from L2 after the first copy, and the floor then misses
    # part of what copying real outputs costs, which pulls a launch-bound figure towards 1
    # (what it measured: docs/decisions.md, 0.5.7). Each output of the k calls is a row of
    # one zeroed block, the same distinct memory as a tensor per call: one
    # fill however many calls, since where no gate is mapped the window starts at the
    # request and k fills there would count in the floor. On cpu, where every window starts
    # at the request, one set: filling k sets there is what the floor would measure.
    specs = [tuple((tuple(s["shape"]), s["dtype"]) for s in c["outs"]) for c in calls]
    if device.startswith("cuda") and specs and all(sp == specs[0] for sp in specs):
        blocks = [torch.zeros((len(calls), *shape), dtype=trees.dtype_of(dtype), device=device)
                  for shape, dtype in specs[0]]
        sets = [tuple(b[j] for b in blocks) for j in range(len(calls))]
    else:
        sets = [tuple(torch.zeros(shape, dtype=trees.dtype_of(dtype), device=device) for shape, dtype in specs[0])
                if specs else ()]
    turn = itertools.cycle(sets)

    def fn(*args: Any) -> tuple:
        return next(turn)

    return fn
