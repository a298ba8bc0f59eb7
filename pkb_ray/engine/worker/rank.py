"""A worker rank: serves its judge's requests, one at a time, until Bye or the end.

Order: Hello (device, a process group that cannot communicate) -> MapArena -> MapGate (cuda) -> Run
with the stand-in (the judge calibrates its clock before any candidate code exists here)
-> Load (guard, then import) -> Run... The judge decides the order; a request this worker
does not expect is answered with Failed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from datetime import timedelta
from typing import Any, Callable

import torch
import torch.distributed as dist

from pkb_ray.engine.worker import guard
from pkb_ray.engine.protocol import codec, messages as m
from pkb_ray.engine.wire import frames
from pkb_ray.engine.wire.arena import Arena, make_arena
from pkb_ray.engine.wire.gate import GatePage, GateUnavailable, LaunchGate
from pkb_ray.engine.worker import no_network, process_group
from pkb_ray.engine.worker.run import context_pace_us, run_calls, stand_in, warm_up

LOG_CHARS = 20000


class Rank:
    def __init__(self, sock: Any, workdir: str) -> None:
        self.sock = sock
        self.reader = frames.FrameReader(sock)
        self.workdir = workdir
        self.device = "cpu"
        self.rank = 0
        self.world_size = 1
        self.arena: Arena | None = None
        self.gate: LaunchGate | None = None
        self.solution: Callable[..., Any] | None = None
        self.guarded = False
        self.ready_for: tuple | None = None
        self.symmetric_ready: float | None = None
        """Seconds the first symmetric allocation took at set-up; None where none was made."""
        self.pace_us: float | None = None
        """cuda: run.context_pace_us, measured at set-up (before any candidate code)."""

    def send(self, msg: codec.Message) -> None:
        frames.send(self.sock, codec.to_wire(msg))

    def serve(self) -> None:
        while True:
            try:
                obj, fds = self.reader.recv()
            except frames.PeerClosed:
                return
            msg = codec.decode(obj, m.REQUESTS)
            if isinstance(msg, m.Bye):
                return
            try:
                self.handle(msg, fds)
            except BaseException as e:  # noqa: BLE001 - everything is reported, nothing escapes
                if isinstance(e, KeyboardInterrupt):
                    raise
                self.fail("setup" if self.solution is None and not isinstance(msg, m.Run) else "call", e)

    def fail(self, stage: str, e: BaseException) -> None:
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        first = (str(e).strip().splitlines() or [""])[0][:400]
        self.send(m.Failed(stage=stage, exc_type=type(e).__name__, message=first,
                           log=tb[-LOG_CHARS:], forbidden=guard.violations()[:20]))

    def handle(self, msg: codec.Message, fds: list[int]) -> None:
        if isinstance(msg, m.Hello):
            self.hello(msg)
        elif isinstance(msg, m.MapArena):
            self.arena = make_arena(msg.kind, msg.nbytes, self.device, fds[0])
            self.send(m.Ok())
        elif isinstance(msg, m.MapGate):
            try:
                page = GatePage(fds[0], self.world_size)
                self.gate = LaunchGate(page, self.rank, torch.cuda.current_device(), msg.timeout_us,
                                       msg.kernel_image or None)
                self.gate_page = page
                self.send(m.Ok())
            except GateUnavailable as e:
                self.send(m.Failed(stage="setup", exc_type="GateUnavailable", message=str(e)))
        elif isinstance(msg, m.Load):
            self.load(msg.source)
        elif isinstance(msg, m.Run):
            self.run(msg)

    def hello(self, msg: m.Hello) -> None:
        if self.ready_for != (msg.rank, msg.world_size, msg.device.split(":")[0], msg.guard):
            self.setup(msg.rank, msg.world_size, msg.device, msg.guard, msg.store_timeout_s)
        self.send(m.Ready(pid=os.getpid(), detail=f"torch {torch.__version__}", pace_us=self.pace_us))

    def setup(self, rank: int, world_size: int, device: str, guard: bool, timeout_s: float,
              settle: Callable[[], object] = lambda: None) -> None:
        """The device and the process group. Done at Hello, or right after the fork when the
        sandbox was started ahead of its candidate (prewarm): the CUDA context and the
        group then cost the candidate's evaluation nothing. `settle` runs once they exist,
        before the guard's filter (the zygote moves the rank to its core there)."""
        if self.ready_for is not None:
            raise RuntimeError("set up twice with different settings")
        self.rank, self.world_size, self.device = rank, world_size, device
        if device.startswith("cuda"):
            torch.cuda.set_device(rank)
            self.device = f"cuda:{rank}"
            torch.zeros(1, device=self.device)  # the CUDA context, now, not in the first call
            warm_up(self.device)
            try:
                self.pace_us = context_pace_us(self.device)
            except Exception:  # noqa: BLE001 - evidence only (a torch without _sleep): no pace, no pairing
                self.pace_us = None
        else:
            # Ranks share the node's cores: 2 ranks on a 2-core machine get 1 thread each.
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
        # A file store in the sandbox's private tmp: the ranks meet with no network at all.
        store = dist.FileStore(os.path.join(self.workdir, "store"), world_size)
        store.set_timeout(timedelta(seconds=timeout_s))
        if guard:
            process_group.init(store, rank, world_size, timeout_s)
            if self.device != "cpu":
                self.symmetric_ready = symmetric_memory_ready(self.device)
            settle()
            no_network.install(cpu=not device.startswith("cuda"))  # from here no socket but a Unix one: no gloo, NCCL, MPI or TCP
        else:
            # A reference self-check (model=reference): the candidate is the reference and
            # needs real collectives. The result says guard_off.
            dist.init_process_group("cuda:nccl,cpu:gloo" if self.device != "cpu" else "gloo", store=store,
                                    rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s))
            if self.device != "cpu":
                # NCCL builds its communicator at the first collective: 0.4 s of the
                # reference's first call at world size 1 (py-spy, H100), inside the
                # evaluation. Here it is built when the sandbox starts, ahead of its
                # evaluation where the node prewarms it.
                dist.all_reduce(torch.zeros(1, device=self.device))
                torch.cuda.synchronize()
            settle()
        self.guarded = guard
        self.ready_for = (rank, world_size, device.split(":")[0], guard)

    def load(self, source: str) -> None:
        path = os.path.join(self.workdir, f"candidate_rank{self.rank}.py")
        with open(path, "w") as f:
            f.write(source)
        if self.guarded:
            guard.install()
        try:
            spec = importlib.util.spec_from_file_location("pkb_candidate", path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules["pkb_candidate"] = module
            spec.loader.exec_module(module)
            solution = getattr(module, "solution", None)
            if not callable(solution):
                raise TypeError("the candidate defines no callable `solution`")
            if self.device != "cpu":
                torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001 - candidate code
            if isinstance(e, KeyboardInterrupt):
                raise
            self.fail("load", e)
            return
        self.solution = solution
        self.send(m.Ok())

    def run(self, msg: m.Run) -> None:
        if self.arena is None:
            raise RuntimeError("Run before MapArena")
        fn = stand_in(msg.calls, self.device) if msg.calibrate else self.solution
        if fn is None:
            raise RuntimeError("Run before Load")
        early: list[frames.Partial] = []
        try:
            res = run_calls(fn, msg.calls, self.arena, self.device, timed=msg.timed, gate=self.gate,
                            gate_gen=msg.gate_gen, hold=msg.hold, stage_back=msg.stage_back,
                            say_queued=lambda g: self.send(m.Queued(gate_gen=g)),
                            planned=lambda trees: early.append(frames.Partial({"op": m.Done.op, "outputs": trees})))
        except BaseException as e:  # noqa: BLE001 - candidate code
            if isinstance(e, KeyboardInterrupt):
                raise
            self.fail("call", e)
            return
        done = m.Done(outputs=res.outputs, event_ms=res.event_ms, host_ms=res.host_ms,
                      expired=self.gate_page.expired(self.rank) if self.gate is not None else 0,
                      forbidden=guard.violations()[:20], started_at=res.started_at)
        if not early:
            self.send(done)
            return
        late = {k: v for k, v in codec.to_wire(done).items() if k not in early[0].keys}
        frames.send_encoded(self.sock, early[0].finish(late))


def symmetric_memory_ready(device: str) -> float | None:
    """One small symmetric allocation, at set-up, before any candidate exists: the first
    `symm_mem.empty` of a process costs 2.0-2.9 s (the allocator's first use, 4 x H200,
    torch 2.11; scripts/device/first_call_profile.py), later ones under a millisecond. Set
    up ahead of its candidate (the node's spare sandbox), the worker pays it off the
    evaluation's clock; inside the candidate's first call it was most of an evaluation's
    node-seconds. No rendezvous: that would tie set-up to every rank's. The buffer stays
    with the process. A failure here costs only the head start (the candidate's own
    allocation meets whatever it was): None."""
    import time

    t0 = time.perf_counter()
    try:
        import torch.distributed._symmetric_memory as symm_mem

        _SYMMETRIC_KEPT.append(symm_mem.empty(64, dtype=torch.uint8, device=device))
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - an optimisation; the candidate meets the real error
        return None
    return time.perf_counter() - t0


_SYMMETRIC_KEPT: list[torch.Tensor] = []
