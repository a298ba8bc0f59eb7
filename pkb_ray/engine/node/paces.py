"""Which spare sandboxes evaluate a candidate together: the reference's and the candidate's
whose CUDA contexts drew the same pace.

Why. A process's CUDA context dispatches kernels at a pace drawn when it is made, and keeps
it for the process's life (worker/run.context_pace_us). On one H200 a fresh process ran 64
queued 2 MiB copies in 0.241 or in 0.249 ms, and matmuls moved with them, whatever CPU it
was born or ran on (scripts/device/placement_probe.py, benchmarks/results/s18_2026-11-29).
Every evaluation takes two fresh workers, so a launch-bound kernel's figure carried two
draws: the allreduce expert at 1024x1024 read 0.465-0.539 over eight evaluations, and the
ratio of its two workers' paces followed it (correlation 0.91); the three evaluations whose
workers drew the same pace read 0.498-0.514.

How. On cuda the node keeps SPARES sandboxes ahead of each kind. At each evaluation it asks
every spare's ranks their pace (a Hello, which a rank set up already answers at once with its
Ready; the judge's own Hello later gets the same answer again) and takes the pair whose
paces agree rank by rank, else the oldest pair that has answered, else the oldest. A spare
still setting up answers later: the node reads that answer before it hands the spare to a
judge, whose channel must hold nothing but the judge's own.

The paces come from workers before any candidate code exists in them (a spare's candidate is
not chosen yet), and a pace only steers which spares are used: never a figure.
"""

from __future__ import annotations

import math
import select
import socket
import time
from typing import Sequence

from pkb_ray.engine.protocol import codec
from pkb_ray.engine.protocol import messages as m
from pkb_ray.engine.wire import frames

MATCHED_ON = ("cuda",)
"""Devices whose spares are matched (cpu: the workers report no pace)."""
TOLERANCE = 0.035
"""Paces within this (|log ratio|) of each other are one draw. On one H200 (16 workers,
benchmarks/results/s18_2026-11-29/g13) the fast draw read 1.840-1.872 us a kernel and the slow one 1.944-2.006: two workers
of one draw were at most 3.1% apart, two of different draws at least 3.8%."""
ASK_WAIT_S = 0.02
"""How long one evaluation waits for spares' answers before it chooses: a rank set up answers
within a millisecond. A spare still setting up is chosen only where no pair of spares has
answered (its answer is then waited for before the hand-out, as its judge would wait for it
anyway)."""

SPARES = 3
"""Sandboxes kept ahead of each kind where spares are matched (else two, or one on cpu).
Paces come in two draws about as often each (1.78-1.88 and 1.92-2.02 us on one H200, 198
workers, benchmarks/results/s19_2026-11-29/g3), and with two spares of each kind the pair
left after a match tends to be one of each. On one machine, every fourth built-in reference
against itself at ws 1, two of each, three of each, two of each again (g5): 15, 23, 15 of
25 evaluations matched; rms |log speedup| 0.0138, 0.0089, 0.0116; timing phase and
node-seconds the same (median 0.77-0.82 s and 1.70-1.76 s). Over all 99 (g3, two of each)
the 37 unmatched read 0.019, the 62 matched 0.008. scripts/pace_pairing_sim.py (a
simulation over those paces) gives 47% matched at ws 1 and 24% at ws 2 (every rank must
agree) with two of each, 83% and 58% with three."""

SETUP_TIMEOUT_S = 600.0
"""The store timeout a Hello names (the rank was set up with its own at the fork)."""


class PaceQuery:
    """One spare sandbox's ranks, asked their pace once."""

    def __init__(self, ends: Sequence[socket.socket], device: str, guard: bool) -> None:
        self.ends = list(ends)
        self.device, self.guard = device, guard
        self.readers = [frames.FrameReader(s) for s in self.ends]
        self.paces: list[float | None] = [None] * len(self.ends)
        self.answered = [False] * len(self.ends)
        self.asked = False
        self.broken = ""
        """Why this spare's channels can no longer be handed to a judge ("" if they can)."""

    def ask(self) -> None:
        if self.asked or self.broken:
            return
        self.asked = True
        world = len(self.ends)
        for r, s in enumerate(self.ends):
            hello = m.Hello(rank=r, world_size=world, device=self.device, guard=self.guard,
                            store_timeout_s=SETUP_TIMEOUT_S)
            try:
                frames.send(s, codec.to_wire(hello))
            except OSError as e:
                self.broken = f"rank {r} could not be asked: {e}"
                return

    @property
    def done(self) -> bool:
        return bool(self.broken) or (self.asked and all(self.answered))

    def known(self) -> list[float] | None:
        """Every rank's pace, once all have answered with one."""
        if self.broken or not all(self.answered) or any(p is None for p in self.paces):
            return None
        return [float(p) for p in self.paces if p is not None]

    def _read(self, r: int, timeout_s: float) -> None:
        """Rank r's answer, whole: a frame is small and sent at once, and a reply read in part
        would leave the judge a torn channel."""
        try:
            obj, fds = self.readers[r].recv(timeout_s=timeout_s)
        except (frames.FrameTimeout, frames.PeerClosed, frames.ProtocolError) as e:
            self.broken = f"rank {r} did not answer its Hello: {type(e).__name__} {e}"
            return
        frames.close_all(fds)
        try:
            ready = codec.decode(obj, (m.Ready,))
        except frames.ProtocolError as e:
            self.broken = f"rank {r} answered its Hello with something else: {e}"
            return
        assert isinstance(ready, m.Ready)
        self.paces[r] = m.bounded_pace(ready.pace_us)
        self.answered[r] = True

    def settle(self, timeout_s: float) -> bool:
        """Before the hand-out: every answer asked for read, so that the judges' channels hold
        only what they will ask. False where a rank did not answer in time (or died): the
        channel cannot be handed out as it is."""
        collect_all([self], timeout_s)
        return not self.broken and (not self.asked or all(self.answered))


def collect_all(queries: Sequence[PaceQuery], timeout_s: float) -> None:
    """The answers of every query that arrive within timeout_s, waited for together."""
    end = time.monotonic() + timeout_s
    while True:
        pending = {s: q for q in queries if q.asked and not q.done
                   for s, a in zip(q.ends, q.answered) if not a}
        left = end - time.monotonic()
        if not pending or left <= 0:
            return
        for s in select.select(list(pending), [], [], left)[0]:
            q = pending[s]
            if not q.broken:
                q._read(q.ends.index(s), max(1.0, left))


def cost(cand: list[float] | None, ref: list[float] | None) -> float | None:
    """How far apart two workers' paces are, rank by rank (the largest |log ratio|); None
    where either is not known."""
    if cand is None or ref is None or len(cand) != len(ref):
        return None
    return max(abs(math.log(c) - math.log(r)) for c, r in zip(cand, ref))


def choose(cands: Sequence[list[float] | None], refs: Sequence[list[float] | None]) -> tuple[int, int]:
    """(candidate spare, reference spare), each by its place in its queue (oldest first): a
    pair whose paces agree within TOLERANCE, else the oldest pair both of whose paces are
    known (those spares are set up: nothing waits), else the oldest; the oldest among equals.
    A spare not known yet is usually still setting up, and an evaluation that takes one
    waits for its set-up (simulated with two spares of each kind: half of the evaluations at
    ws 1, 0.25 s each on average; three in four at ws 2, 1.5 s)."""
    best: tuple[tuple[int, int], int, int] | None = None
    for i, c in enumerate(cands):
        for j, r in enumerate(refs):
            k = cost(c, r)
            tier = 0 if k is not None and k <= TOLERANCE else 1 if k is not None else 2
            key = (tier, i + j)
            if best is None or key < best[0]:
                best = (key, i, j)
    assert best is not None, "choose() needs a spare of each kind"
    return best[1], best[2]
