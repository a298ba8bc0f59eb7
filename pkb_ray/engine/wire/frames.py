"""Length-prefixed JSON frames over a Unix stream socket, with file descriptors alongside.

JSON, not pickle: a frame from a worker is data written by an adversary, and unpickling it
would run its code in the judge. Frames are bounded (`max_bytes`), so a worker cannot make
the judge read or buffer gigabytes; a violation is a `ProtocolError` (the worker broke the
protocol), never a crash of the judge.
"""

from __future__ import annotations

import json
import math
import os
import select
import socket
import struct
import time
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 8 << 20
"""Judge -> worker frames carry the candidate's source; worker -> judge frames are smaller
(the judge reads them with a lower limit)."""
MAX_FDS = 4
MAX_DEPTH = 100
"""Nesting of a frame's JSON. The deepest legitimate frame is a Run or Done whose trees hold
trees.MAX_DEPTH (32) tagged containers, two JSON levels each, under 4 levels of message:
68. A frame nested a million deep made json.loads raise RecursionError in the judge, which
the judge took for its own bug (harness_error, retried forever)."""
MAX_INT = (1 << 63) - 1
"""The largest magnitude of an int in a frame (JSON's are unbounded)."""


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed frame of the protocol."""


class PeerClosed(ProtocolError):
    """The peer closed its end (it exited or was killed)."""


class FrameTimeout(Exception):
    """No frame arrived within the allowed time."""


def _finite(obj: Any) -> Any:
    # JSON has no inf/nan; a float that is not finite travels as a tagged string.
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__float__": repr(obj)}
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _unfinite(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__float__"} and obj["__float__"] in ("inf", "-inf", "nan"):
            return float(obj["__float__"])
        return {k: _unfinite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unfinite(v) for v in obj]
    return obj


def _json(obj: Any) -> str:
    return json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False)


def _framed(body: bytes) -> bytes:
    if len(body) > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def encode(obj: Any) -> bytes:
    return _framed(_json(obj).encode())


class Partial:
    """A frame of one JSON object whose bulk is encoded now and whose last fields are added
    later: a worker encodes its answer's output trees while the device still runs (tens of
    microseconds per call, which inside the judge's window would dwarf a short call), and
    only the few numbers known at the end after the synchronize."""

    def __init__(self, early: dict[str, Any]) -> None:
        self.keys = frozenset(early)
        self._head = _json(early)

    def finish(self, late: dict[str, Any]) -> bytes:
        """The frame of early and late together, as encode(early | late) decodes."""
        if self.keys & late.keys():
            raise ValueError(f"fields given twice: {sorted(self.keys & late.keys())}")
        tail = _json(late)
        if tail == "{}":
            return _framed(self._head.encode())
        if self._head == "{}":
            return _framed(tail.encode())
        return _framed((self._head[:-1] + "," + tail[1:]).encode())


def send(sock: socket.socket, obj: Any, fds: list[int] | None = None) -> float:
    """Send one frame; returns the perf_counter reading taken just before the bytes left
    (after encoding): the peer cannot have read the frame before that instant, whereas a
    reading after the send can come late (the sender may lose the CPU to the woken peer)."""
    return send_encoded(sock, encode(obj), fds)


def send_encoded(sock: socket.socket, data: bytes, fds: list[int] | None = None) -> float:
    """send() of a frame already encoded (encode() or Partial.finish())."""
    t = time.perf_counter()
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        if sent < len(data):
            sock.sendall(data[sent:])
    else:
        sock.sendall(data)
    return t


_KEEP_QUOTES_AND_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')
_AS_PARENS = bytes.maketrans(b"[]{}", b"()()")


def json_depth(body: bytes) -> int:
    """How deep the arrays and objects of `body` nest, found without parsing it, in C-speed
    bytes operations (a Done of 64 calls: ~0.02 ms; 2 MB: a few ms): escaped backslashes and
    quotes are dropped, then everything but quotes and brackets, then what lies between
    quotes (strings may hold brackets); each pass of removing "()" pairs then peels one
    level. Unbalanced brackets count as their number of openers (an upper bound)."""
    reduced = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _KEEP_QUOTES_AND_BRACKETS)
    parens = b"".join(reduced.split(b'"')[::2]).translate(_AS_PARENS)
    depth = 0
    too_deep = b"(" * (MAX_DEPTH + 1)
    while parens and depth <= MAX_DEPTH:
        # A run of openers is that deep at least: found in one scan, where peeling a frame
        # nested a million deep took MAX_DEPTH scans of 2 MB (0.65 s; on a loaded CI machine
        # long enough to turn the attack's runtime_error into a trial timeout).
        # Counted like an unbalanced body: its openers (an upper bound, past the limit).
        if too_deep in parens:
            return depth + parens.count(b"(")
        peeled = parens.replace(b"()", b"")
        if len(peeled) == len(parens):  # unbalanced: no pair left to peel
            return depth + peeled.count(b"(")
        parens, depth = peeled, depth + 1
    return depth + parens.count(b"(") if parens else depth


def _bounded_int(text: str) -> int:
    # JSON's ints are unbounded: float() of a 400-digit one raises OverflowError in whoever
    # reads it (attack overflows_report.py), and a dict keyed by ints that differ by multiples
    # of 2**61 - 1 (which hash alike) costs quadratic time to build (collides_keys.py).
    value = int(text)
    if abs(value) > MAX_INT:
        raise ValueError(f"an integer of {value.bit_length()} bits (at most 63)")
    return value


def parse(body: bytes) -> Any:
    """The JSON of one frame's body, checked for depth before it is parsed: any malformed
    body is a ProtocolError naming what is wrong, never another exception."""
    depth = json_depth(body)
    if depth > MAX_DEPTH:
        raise ProtocolError(f"frame nested {depth} deep exceeds the limit of {MAX_DEPTH}")
    try:
        return _unfinite(json.loads(body, parse_int=_bounded_int))
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"frame is not JSON: {e}") from e
    except (RecursionError, MemoryError) as e:  # bounded above; kept as a second wall
        raise ProtocolError(f"frame cannot be parsed within the limits ({type(e).__name__})") from e


class FrameReader:
    """Reads frames (and the file descriptors sent with them) from one socket."""

    def __init__(self, sock: socket.socket, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self.sock = sock
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._fds: list[int] = []
        self.arrived = 0.0
        """perf_counter when the last frame returned by recv() was complete."""

    def _fill(self, deadline: float | None) -> None:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise FrameTimeout()
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.sock, 1 << 20, MAX_FDS)
        except ConnectionResetError as e:
            raise PeerClosed("connection reset") from e
        except OSError as e:
            raise ProtocolError(f"receiving: {e}") from e
        self._fds.extend(fds)
        if len(self._fds) > MAX_FDS:
            # A frame sent a byte at a time, descriptors with each, would fill this process's
            # table (attack leaks_fds.py); no frame of the protocol carries more than MAX_FDS.
            self.close_fds()
            raise ProtocolError(f"more than {MAX_FDS} descriptors with one frame")
        if not data:
            raise PeerClosed("the peer closed the channel")
        self._buf += data

    def buffered(self) -> bool:
        """A whole frame is already read (select() on the socket would not say so)."""
        if len(self._buf) < _HEADER.size:
            return False
        (n,) = _HEADER.unpack(self._buf[:_HEADER.size])
        return len(self._buf) >= _HEADER.size + n

    def recv(self, timeout_s: float | None = None) -> tuple[Any, list[int]]:
        """The next frame's decoded JSON and the descriptors that came with it."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while len(self._buf) < _HEADER.size:
            self._fill(deadline)
        (n,) = _HEADER.unpack(self._buf[:_HEADER.size])
        if n > self.max_bytes:
            raise ProtocolError(f"frame of {n} bytes exceeds the limit of {self.max_bytes}")
        while len(self._buf) < _HEADER.size + n:
            self._fill(deadline)
        # When the whole frame was here, before parsing it: a judge's window ends when the
        # worker's answer has arrived, not when the judge has finished reading it (parsing
        # and checking a Done of 64 outputs took 0.1-0.3 ms, inside every window alike).
        self.arrived = time.perf_counter()
        body = bytes(self._buf[_HEADER.size:_HEADER.size + n])
        del self._buf[:_HEADER.size + n]
        fds, self._fds = self._fds, []
        try:
            return parse(body), fds
        except ProtocolError:
            close_all(fds)  # the frame is refused, and what came with it
            raise

    def close_fds(self) -> None:
        """Close the descriptors received with a frame not yet returned."""
        fds, self._fds = self._fds, []
        close_all(fds)


def close_all(fds: list[int]) -> None:
    """Close each descriptor; one already closed is passed over."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
