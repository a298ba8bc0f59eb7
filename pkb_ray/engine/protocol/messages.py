"""The typed messages between a judge and its worker.

Every message is a frozen dataclass, written and checked by the codec (codec.py): a worker
cannot smuggle a verdict, a message the judge is not waiting for, or a value of the wrong
type past it. Trees of arguments and outputs travel as JSON and are checked by
wire/trees.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from pkb_ray.engine.protocol.codec import Message

REFUSAL = "is not allowed in a candidate"
"""What the worker's guard says when it refuses a collective (worker/guard.py)."""


# ---------------------------------------------------------------- judge -> worker

@dataclass(frozen=True)
class Hello(Message):
    """Set up: the rank's device, its process group (one whose collectives refuse, unless
    the guard is off for a reference self-check) and nothing else."""
    op: ClassVar[str] = "hello"
    rank: int
    world_size: int
    device: str
    guard: bool
    store_timeout_s: float


@dataclass(frozen=True)
class MapArena(Message):
    """Map the arena whose descriptor comes with this message (inputs and output slots)."""
    op: ClassVar[str] = "arena"
    kind: str
    """host (shared memory) | cuda (a cuMem allocation exported as a file descriptor)."""
    nbytes: int


@dataclass(frozen=True)
class MapGate(Message):
    """Map the launch-gate page (sent with this message): the judges open the gate."""
    op: ClassVar[str] = "gate"
    timeout_us: int
    kernel_image: str = ""
    """The gate kernel, compiled once by the judge, base64 (empty: the worker compiles it)."""


@dataclass(frozen=True)
class Load(Message):
    op: ClassVar[str] = "load"
    source: str


@dataclass(frozen=True)
class Run(Message):
    """Call the candidate (or, before it is loaded, an empty stand-in that returns outputs
    of the expected shapes: `calibrate`) once per entry of `calls`, then copy each call's
    outputs into its slots. `timed`: between a start and an end event, behind the gate
    when `gate_gen` > 0 (the worker says Queued once everything is queued)."""
    op: ClassVar[str] = "run"
    calls: list
    """[{"args": tree, "outs": [slot, ...]}, ...] (trees.py)."""
    timed: bool
    gate_gen: int
    hold: bool = True
    """Gated: queue every call behind the gate, then say Queued. False: the gate only
    lines the ranks up (say Queued right after it), for callables that wait on the GPU
    from the host and would deadlock behind a closed gate."""
    calibrate: bool = False
    stage_back: bool = False
    """Host arena on cuda: copy the staged inputs back so the judge sees any change."""


@dataclass(frozen=True)
class Bye(Message):
    op: ClassVar[str] = "bye"


# ---------------------------------------------------------------- worker -> judge

@dataclass(frozen=True)
class Ready(Message):
    op: ClassVar[str] = "ready"
    pid: int
    detail: str = ""
    pace_us: float | None = None
    """cuda: the worker's context's time per kernel (worker/run.context_pace_us), measured at
    set-up, before the candidate's code existed there; None on cpu."""


LEAST_PACE_US, MOST_PACE_US = 1e-3, 1e6
"""What a Ready's pace may be: a kernel takes more than a nanosecond and less than a second."""


def bounded_pace(pace: float | None) -> float | None:
    """A pace a worker reported (untyped input until here), or None where no kernel takes it."""
    if pace is None or not math.isfinite(pace) or not LEAST_PACE_US < pace < MOST_PACE_US:
        return None
    return float(pace)


@dataclass(frozen=True)
class Ok(Message):
    op: ClassVar[str] = "ok"


@dataclass(frozen=True)
class Failed(Message):
    """The worker's account of an exception (untrusted: it only ever explains a failure)."""
    op: ClassVar[str] = "failed"
    stage: str
    """load | call | setup."""
    exc_type: str
    message: str
    log: str = ""
    forbidden: list = field(default_factory=list)
    """APIs the worker-side guard refused."""


@dataclass(frozen=True)
class Queued(Message):
    op: ClassVar[str] = "queued"
    gate_gen: int


@dataclass(frozen=True)
class Done(Message):
    op: ClassVar[str] = "done"
    outputs: list
    """One output tree per call (trees.py), tensor leaves naming the slot they were copied to."""
    event_ms: float
    """Timed runs: the worker's CUDA-event (or cpu host-clock) time of all the calls."""
    host_ms: float
    """Timed runs: the worker's host time from start (gate opened) to the synchronize."""
    expired: int
    """Gates that timed out on this rank so far (the callable waited on the GPU from the host)."""
    forbidden: list = field(default_factory=list)
    started_at: float = 0.0
    """The worker's perf_counter (one clock for the node's processes) when its calls started."""


REQUESTS = (Hello, MapArena, MapGate, Load, Run, Bye)
REPLIES = (Ready, Ok, Failed, Queued, Done)
