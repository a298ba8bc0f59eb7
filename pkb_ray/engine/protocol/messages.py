"""The typed messages between a judge and its worker.

Every message is a frozen dataclass; on the wire it is `{"op": ..., **fields}` (frames.py).
`decode` checks the op against what the reader expects at that point of the protocol and
the type of every field, so a worker cannot smuggle a verdict, a message the judge is not
waiting for, or a value of the wrong type past it. Trees of arguments and outputs travel
as JSON and are checked by trees.py.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pkb_ray.engine.wire.frames import ProtocolError

REFUSAL = "is not allowed in a candidate"
"""What the worker's guard says when it refuses a collective (worker/guard.py)."""


_REGISTRY: dict[str, type] = {}


@dataclass(frozen=True)
class Message:
    op: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("op"):
            if _REGISTRY.setdefault(cls.op, cls) is not cls:
                raise TypeError(f"two messages named {cls.op!r}")


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


def to_wire(msg: Message) -> dict[str, Any]:
    return {"op": msg.op, **{f.name: _plain(getattr(msg, f.name)) for f in dataclasses.fields(msg)}}


def _plain(value: Any) -> Any:
    """A field's value as JSON: a nested record (a frozen dataclass that is not a Message,
    e.g. control.TimingSamples) becomes an object of its fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _check(value: Any, hint: Any, where: str) -> None:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for h in typing.get_args(hint):
            try:
                _check(value, h, where)
                return
            except ProtocolError:
                continue
        raise ProtocolError(f"{where}: {type(value).__name__} is not {hint}")
    if hint is Any:
        return
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {type(value).__name__}")
        return
    if hint is type(None):
        if value is not None:
            raise ProtocolError(f"{where}: expected null")
        return
    base = origin or hint
    if base is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif base is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, base)
    if not ok:
        raise ProtocolError(f"{where}: expected {getattr(base, '__name__', base)}, got {type(value).__name__}")


def decode(obj: Any, expected: tuple[type[Message], ...]) -> Message:
    """The message in `obj` if it is one of `expected`, with every field of the right type."""
    if not isinstance(obj, dict) or not isinstance(obj.get("op"), str):
        raise ProtocolError("a message must be an object with an op")
    cls = _REGISTRY.get(obj["op"])
    if cls is None or cls not in expected:
        want = ", ".join(c.op for c in expected)
        raise ProtocolError(f"unexpected message {obj['op']!r} (expected {want})")
    return _fields_of(cls, obj, cls.op)


def _fields_of(cls: type, obj: dict, where: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    extra = set(obj) - set(fields) - {"op"}
    if extra:
        raise ProtocolError(f"{where}: unknown fields {sorted(extra)}")
    kwargs = {}
    for name, f in fields.items():
        if name not in obj:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ProtocolError(f"{where}: missing field {name}")
            continue
        _check(obj[name], hints[name], f"{where}.{name}")
        kwargs[name] = _nested(obj[name], hints[name], f"{where}.{name}")
    return cls(**kwargs)


def _nested(value: Any, hint: Any, where: str) -> Any:
    """A nested record's object decoded into its dataclass (its fields checked the same way)."""
    for h in typing.get_args(hint) or (hint,):
        if isinstance(h, type) and dataclasses.is_dataclass(h) and isinstance(value, dict):
            return _fields_of(h, value, where)
    return value
