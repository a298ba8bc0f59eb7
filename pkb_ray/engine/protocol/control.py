"""The typed messages between the node (the evaluator process) and its judges.

Both ends are trusted harness code, but the records stay typed across the boundary all the
same (frames.py's JSON, checked by messages.decode's rules): a frozen JudgeJob in, events
and a JudgeReport out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pkb_ray.config.schema import TimeoutConfig, TimingConfig
from pkb_ray.engine.protocol.messages import Message


@dataclass(frozen=True)
class TimingMode:
    """How a problem's calls are timed on a node: whether both halves are held behind the
    launch gate, and how many calls make a sample. A property of the problem, its size and
    world size, the node and the harness, never of one evaluation: two modes give two
    figures for one kernel (the reduce_scatter expert read 2.26x unheld and 1.27x held on
    one idle node), so the first evaluation decides it from the reference alone and the
    node keeps it (engine/timing_modes.py) for every later one."""
    held: bool
    calls_per_sample: int


@dataclass(frozen=True)
class TimingConditions:
    """What the host was doing while the samples were taken (rank 0's judge reads them
    around the phase): a figure taken on a loaded machine is a draw of the load, not of the
    kernel (one honest file read 0.99x and 2.86x with intervals that excluded each other on
    a loaded 2-core machine)."""
    cpu_pressure: float | None = None
    """Share of the phase's wall time in which some runnable task waited for a CPU
    (/proc/pressure/cpu "some"); None where the kernel has no PSI."""
    steal: float | None = None
    """Share of CPU time the hypervisor took from this machine (/proc/stat steal)."""
    foreign: float | None = None
    """Share of the host's CPU capacity used by processes that are not this evaluation's
    (its judges, its workers' sandboxes) during the phase."""
    cpus: int = 0


@dataclass(frozen=True)
class TimingSamples:
    """Rank 0's account of the timing phase, as every judge agreed on it: per sample, the
    slowest rank's window (gate opened -> answer, judge's clock) for each half, and what the
    workers said of themselves. Times in ms for a whole sample of `calls_per_sample` calls."""
    reference_window_ms: list
    candidate_window_ms: list
    reference_report_ms: list
    """The trusted reference worker's own clock (CUDA events / host clock), slowest rank."""
    candidate_report_ms: list
    """The candidate worker's own clock: evidence only, never a figure."""
    floor_ms: float
    """A sample of do-nothing calls on the same path (both workers, before any code loaded)."""
    floor_curve_ms: list
    """[[calls, ms], ...]: the floor as calibrated (this judge's), for a person to look at."""
    calls_per_sample: int
    gated: bool
    stopped: str
    unmeasurable: str = ""
    before_open_ms: float | None = None
    impossible: list = field(default_factory=list)
    mode_source: str = ""
    """cached: the node's mode for this problem; calibrated: decided in this evaluation
    from the reference's probe (the node keeps it for the next ones); improvised: decided
    here where the launch gate could not be mapped (used once, never kept)."""
    reference_expired: int = 0
    candidate_expired: int = 0
    """Samples left out because that half's gate expired while the mode holds calls
    (timing/expiries.py)."""
    unmeasurable_kind: str = ""
    """too_short_reference | too_short_candidate | waits_on_host | no_gate | loaded."""
    problem_calls_per_sample: int = 0
    """The problem's calls per sample (its mode); calls_per_sample is fewer where this
    evaluation's calls filled the launch queue behind a held gate."""
    conditions: TimingConditions | None = None
    loaded: bool = False
    """The host was too loaded for a figure (`unmeasurable` says how)."""


@dataclass(frozen=True)
class JudgeJob(Message):
    """One evaluation, for one judge: what the request asked (engine/evaluation.py builds it
    from the EvalRequest), then what the node adds. Comes with four descriptors: the channel
    to this rank's candidate worker and the candidate's gate page, then (timed jobs) the
    channel to this rank's reference worker and its gate page."""
    op: ClassVar[str] = "job"
    problem_id: str
    problems_source: str
    loader: str
    candidate_source: str
    size: str
    trials: int
    guard: bool
    time_candidate: bool
    timing: TimingConfig
    timeouts: TimeoutConfig
    transport: str
    """cuda | host: where the arena lives (arena.py)."""
    cache_dir: str
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


@dataclass(frozen=True)
class JudgeReport(Message):
    """This rank's verdict on one evaluation. `failure` empty = correct on this rank."""
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
