"""A judge process: `python -m pkb_ray.engine.judge.main` (started by the node, never forked
from anything that ran candidate code). It joins the judges' group, builds its gate, then
serves JudgeJobs from the node until Quit.

It starts with a JudgeStart record (engine/protocol/start.py: its rank, the world size, the device,
the store's port, its two descriptors).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import TYPE_CHECKING, Any, Callable

from pkb_ray.engine.protocol.start import JudgeStart, payload

if TYPE_CHECKING:
    from pkb_ray.engine.judge.context import JudgeContext
    from pkb_ray.engine.wire.frames import FrameReader


def main() -> int:
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <judge>` prints where it is
    start = payload(JudgeStart)
    pinned = False
    if start.core >= 0:
        from pkb_ray.engine.wire.cores import pin_process

        # On its core before importing torch: the import (1-3 s of CPU), left to the
        # scheduler, may run on a core another GPU group's judge or worker is timing on.
        pinned = pin_process(start.core)
    # NCCL's heartbeat monitor and its watchdog's dump check poll the node's store: when the
    # node drops the store before a judge has exited, each prints a traceback. The judges'
    # own deadlines (group.REFERENCE_TIMEOUT_S, the node's) already turn a hang into an error.
    os.environ["TORCH_NCCL_ENABLE_MONITORING"] = "0"
    os.environ["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "0"
    import torch

    from pkb_ray.engine.judge.context import JudgeContext
    from pkb_ray.engine.protocol.control import JudgeReady
    from pkb_ray.engine.judge.group import JudgeGroup
    from pkb_ray.engine.protocol import codec
    from pkb_ray.engine.wire import frames

    rank, world, device = start.rank, start.world_size, start.device
    if device == "cuda":
        torch.cuda.set_device(rank)
        device = f"cuda:{rank}"
        torch.zeros(1, device=device)
        if pinned:
            # One core, one thread: torch's pool (a thread per physical core) would share
            # it, and after each parallel CPU op (inputs drawn on the CPU: moe_dispatch's
            # routing) its threads spin before they sleep, delaying this thread's next
            # answer from a worker, which is the end of a timed window.
            torch.set_num_threads(1)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    ctl = socket.socket(fileno=start.control_fd)
    reader = frames.FrameReader(ctl)
    group = JudgeGroup(rank, world, device, start.store_port, start.group_timeout_s)
    ctx = JudgeContext(rank, world, device, group)
    ctx.build_ref_gate(start.gate_fd, start.gate_timeout_us)
    if device.startswith("cuda"):
        # Imported by the first evaluation's calibration otherwise: 0.7-0.8 s of it (py-spy,
        # H100). Not on cpu, where judges of several evaluations share two cores with their
        # yielding workers (tests/driver/test_node_loss.py).
        import scipy.stats  # noqa: F401
    frames.send(ctl, codec.to_wire(JudgeReady(pid=os.getpid(), gate=ctx.ref_gate is not None, detail=ctx.gate_note)))

    def notify(event: codec.Message) -> None:
        frames.send(ctl, codec.to_wire(event))

    try:
        serve(ctl, reader, ctx, notify)
    finally:
        group.close()
    return 0


def serve(ctl: socket.socket, reader: "FrameReader", ctx: "JudgeContext", notify: Callable[[Any], None]) -> None:
    """JudgeJobs from the node, one at a time, until Quit or the node closes the channel."""
    from pkb_ray.engine.protocol.control import JudgeJob, Quit
    from pkb_ray.engine.judge.session import Session
    from pkb_ray.engine.judge.timing.sampling import run_timing
    from pkb_ray.engine.protocol import codec
    from pkb_ray.engine.wire import frames

    world = ctx.world_size
    decoded = (JudgeJob, Quit)
    while True:
        try:
            obj, fds = reader.recv()
        except frames.PeerClosed:
            return
        msg = codec.decode(obj, decoded)  # type: ignore[arg-type]
        if isinstance(msg, Quit):
            return
        # The candidate worker's channel and gate page, then (timed jobs) the reference
        # worker's.
        sides = [_side(name, fds[i], fds[i + 1], world, root)
                 for name, i, root in (("candidate", 0, msg.candidate_root_pid), ("reference", 2, msg.reference_root_pid))
                 if len(fds) >= i + 2]
        try:
            report = Session(ctx, msg, sides[0], sides[1] if len(sides) > 1 else None, notify, run_timing).run()
        finally:
            for side in sides:
                side.link.sock.close()
                if side.page is not None:
                    side.page.close()
                os.close(side.page_fd)
        frames.send(ctl, codec.to_wire(report))


def _side(name: str, worker_fd: int, page_fd: int, world: int, root_pid: int) -> Any:
    from pkb_ray.engine.judge.link import WorkerLink
    from pkb_ray.engine.judge.session import WorkerSide
    from pkb_ray.engine.wire.gate import GatePage, GateUnavailable

    try:
        page: GatePage | None = GatePage(page_fd, world)
    except GateUnavailable:
        page = None
    return WorkerSide(name=name, link=WorkerLink(socket.socket(fileno=worker_fd)), page=page, page_fd=page_fd,
                      root_pid=root_pid)


if __name__ == "__main__":
    sys.exit(main())
