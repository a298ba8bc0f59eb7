"""The typed messages between the node (the evaluator process) and its judges.

Both ends are trusted harness code, but the records stay typed across the boundary all the
same (codec.py's rules): a frozen JudgeJob in, events and a JudgeReport out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pkb_ray.engine.protocol.codec import Message
from pkb_ray.engine.protocol.timing import TimingMode, TimingSamples
from pkb_ray.engine.request import EvalRequest


@dataclass(frozen=True)
class JudgeJob(Message):
    """One evaluation, for one judge: the request as the node got it, then what the node
    adds. Comes with four descriptors: the channel to this rank's candidate worker and the
    candidate's gate page, then (timed jobs) the channel to this rank's reference worker and
    its gate page."""
    op: ClassVar[str] = "job"
    request: EvalRequest
    """Its problems source made absolute: a judge's working directory is not the node's."""
    loader: str
    """"module:function" that loads the problem: `(source, problem_id) -> Problem`."""
    reference_key: str
    mode: TimingMode | None = None
    """The problem's timing mode on this node (None: the judges decide it from the
    reference's probe and report it in TimingSamples)."""
    eval_id: str = ""
    """Set by the node for each evaluation (a judge ignores what is not its current one)."""
    seed: int = 0
    """Set by the node, from os.urandom, for this evaluation alone: its secret. Every input
    and every choice of checked call derives from it."""
    candidate_root_pid: int = 0
    reference_root_pid: int = 0
    """Set by the node: the first process of each worker's sandbox, on the host (0: none). On
    cpu a judge stops the worker whose half is not being timed (judge/freezer.py)."""

    @property
    def timed(self) -> bool:
        return self.request.eval.time_candidates


@dataclass(frozen=True)
class Quit(Message):
    op: ClassVar[str] = "quit"


@dataclass(frozen=True)
class JudgeReady(Message):
    op: ClassVar[str] = "judge_ready"
    pid: int
    gate: bool
    """The judges' own launch gate could be built (reference timing can be gated)."""
    detail: str = ""


@dataclass(frozen=True)
class JudgeEvent(Message):
    """Sent as soon as this judge's worker fails: the node stops the sandbox at once, so the
    other ranks' workers do not hang on a dead peer until their phase limit."""
    op: ClassVar[str] = "judge_event"
    eval_id: str
    phase: str
    failure: str
    message: str
    trial: int = -1
    worker_gone: bool = False
    """The worker's channel closed: it died, or the node stopped it after another failure."""


@dataclass
class JudgeReport(Message):
    """This rank's verdict on one evaluation. `failure` empty = correct on this rank. Built up
    by the judge's session phase by phase, then sent once."""
    op: ClassVar[str] = "judge_report"
    eval_id: str
    rank: int
    failure: str = ""
    message: str = ""
    phase: str = ""
    trial: int = -1
    own_fault: bool = True
    """False for a verdict that is not about this rank's own worker."""
    worker_gone: bool = False
    max_abs_error: float = 0.0
    log: str = ""
    compiled: bool = False
    timing: TimingSamples | None = None
    """Rank 0 only: the gathered per-sample times and what the judges' clocks said."""
    checked_timed_calls: int = 0
    flags: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)
    """Wall time per phase on this judge."""
