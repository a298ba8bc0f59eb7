"""The judge's end of the channel to its worker: requests out, checked replies in.

A reply is data from an adversary: bounded frames, typed messages, only the ops the judge
expects at that point. Whatever goes wrong on the worker's side becomes a WorkerFault the
session turns into a failure class; nothing a worker sends can raise anything else here.
"""

from __future__ import annotations

import re
import socket

from pkb_ray.engine.protocol import codec, messages as m
from pkb_ray.engine.wire import frames
from pkb_ray.engine.protocol.messages import REFUSAL
from pkb_ray.records import FailureClass

REPLY_MAX_BYTES = 2 << 20
_CUDA_ERROR = re.compile(
    r"illegal memory access|illegal address|CUDA error|CUDA_ERROR|cudaError|device-side assert"
    r"|unspecified launch failure|misaligned address|illegal instruction|Xid", re.I)
_COMPILE = ("Error building extension", "ninja: build stopped", "nvcc fatal", "compilation terminated")


def is_cuda_error(text: str) -> bool:
    return bool(_CUDA_ERROR.search(text or ""))


class WorkerFault(Exception):
    """The worker failed, hung, vanished or broke the protocol."""

    def __init__(self, failure: FailureClass, message: str, log: str = "", gone: bool = False) -> None:
        super().__init__(message)
        self.failure, self.message, self.log, self.gone = failure, message, log, gone


def classify_failed(msg: m.Failed, candidate_loaded: bool = True) -> FailureClass:
    """The class of a worker's account of a failure. Its `stage` is the worker's word: "setup"
    is believed (harness_error) only before the candidate was sent, when no candidate code
    exists in the worker; after that a "setup" failure is the candidate's (a forged one
    otherwise made a wrong answer a harness_error: deferred, never recorded)."""
    text = f"{msg.exc_type}: {msg.message}\n{msg.log}"
    if msg.forbidden or REFUSAL in text or msg.exc_type == "ForbiddenAPIError":
        return FailureClass.FORBIDDEN_API
    if msg.stage == "load" and any(k in text for k in _COMPILE):
        return FailureClass.COMPILE_ERROR
    if is_cuda_error(text):
        return FailureClass.CUDA_FAULT
    if msg.stage == "setup" and not candidate_loaded:
        return FailureClass.HARNESS_ERROR
    return FailureClass.RUNTIME_ERROR


class WorkerLink:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = frames.FrameReader(sock, REPLY_MAX_BYTES)
        self.candidate_sent = False
        """Set once the candidate's source left for the worker: from then on its code may run there."""

    def send(self, msg: codec.Message, fds: list[int] | None = None) -> float:
        """Send a request; returns when (perf_counter)."""
        if isinstance(msg, m.Load):
            self.candidate_sent = True
        try:
            return frames.send(self.sock, codec.to_wire(msg), fds)
        except OSError as e:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker is gone ({e})", gone=True) from e

    def receive(self, expected: tuple[type[codec.Message], ...], timeout_s: float, phase: str) -> codec.Message:
        """The next reply, which must be one of `expected` (a Failed reply raises)."""
        try:
            obj, fds = self.reader.recv(timeout_s=max(timeout_s, 0.0))
        except frames.FrameTimeout:
            raise WorkerFault(FailureClass.TIMEOUT, f"did not finish {phase} within {timeout_s:.0f} s") from None
        except frames.PeerClosed:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker ended during {phase}", gone=True) from None
        except frames.ProtocolError as e:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol during {phase}: {e}") from None
        frames.close_all(fds)  # a worker has no descriptor to give a judge
        try:
            msg = codec.decode(obj, expected + (m.Failed,))
        except frames.ProtocolError as e:
            raise WorkerFault(FailureClass.RUNTIME_ERROR, f"the worker broke the protocol during {phase}: {e}") from None
        if isinstance(msg, m.Failed):
            fc = classify_failed(msg, self.candidate_sent)
            what = f"{msg.exc_type}: {msg.message}" if msg.message else msg.exc_type
            if msg.forbidden:
                what += f" (refused: {', '.join(map(str, msg.forbidden[:3]))})"
            raise WorkerFault(fc, f"{phase}: {what}"[:600], log=msg.log[-20000:])
        return msg

    def ask(self, msg: codec.Message, expected: tuple[type[codec.Message], ...], timeout_s: float, phase: str,
            fds: list[int] | None = None) -> codec.Message:
        self.send(msg, fds)
        return self.receive(expected, timeout_s, phase)
