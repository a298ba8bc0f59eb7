"""The one codec of the engine's records: a frozen dataclass on the wire is
`{"op": ..., **fields}` (wire/frames.py carries it as JSON).

`decode` checks the op against what the reader expects at that point of the protocol and
the type of every field, nested records included, so a record read from another process is
either what the reader expects or a ProtocolError. Every message between processes (judge
and worker, node and judge) and every child's start record is written and read here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, ClassVar

from pkb_ray.engine.wire.frames import ProtocolError

_REGISTRY: dict[str, type] = {}


class Message:
    """A record the codec writes and reads: a dataclass with a unique `op`. Frozen, but for a
    record built up by its sender before it is sent once (control.JudgeReport)."""
    op: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("op"):
            if _REGISTRY.setdefault(cls.op, cls) is not cls:
                raise TypeError(f"two messages named {cls.op!r}")


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
