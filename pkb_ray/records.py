"""Typed records that cross stage boundaries: cells, generations, evaluation results.

Every stage returns one of these instead of raising, so a failure is data that the
driver records (status + failure class + message), never an exception that stops a sweep.
Records are plain dataclasses that round-trip through JSON for the journal and Ray.
Loading is strict: a key no record field has raises RecordError naming the key, because a
silently dropped key is a result lost without a trace. Each journal record carries
`version` (RECORD_VERSION); records written before versions load as version 1.

The bottom layer with config: imports nothing of pkb_ray, and every package may import it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import Any

RECORD_VERSION = 3
"""Version of the CellResult layout written now. 1: before versions (a turn's `correct` was
0.0/1.0); 2: `version` present, turns typed as TurnSummary (`correct` a bool); 3: an
evaluation says what it shared (gpus, gpu_link, sharing, co_tenancy). Older versions load
with those empty."""


class RecordError(ValueError):
    """A stored record this pkb cannot read as written: an unknown key, a wrong shape or a
    version newer than RECORD_VERSION. The message names the key."""


class FailureClass(str, enum.Enum):
    """Why a cell did not end correct. Evaluation classes first, then generation classes.
    What each class means for a cell (status, transience, priority, agent retry) is in
    FAILURE_TABLE below: one table, read by every stage."""

    # evaluation
    PARSE_ERROR = "parse_error"
    FORBIDDEN_API = "forbidden_api"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    CUDA_FAULT = "cuda_fault"
    TIMEOUT = "timeout"
    INCORRECT = "incorrect"
    NAN = "nan"
    IMPLAUSIBLE = "implausible"
    """Correct outputs, but a time no honest run can have: faster than the hardware's roofline
    (< 0.9 x roofline), or a worker-reported time the judge's own clock contradicts. Never
    counted correct or fast; kept with its evidence for a person to look at."""
    RESOURCE_LIMIT = "resource_limit"
    """The candidate's sandbox reached one of its bounds (processes, memory): the message names
    which. Its own doing, never the harness's; fed back to a model like a runtime error."""
    HARNESS_ERROR = "harness_error"
    # generation
    RATE_LIMITED = "rate_limited"
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    GENERATION_TIMEOUT = "generation_timeout"
    SERVER_ERROR = "server_error"
    NO_CODE = "no_code"
    BUDGET_EXHAUSTED = "budget_exhausted"
    NO_CANDIDATE = "no_candidate"  # pseudo-model has nothing for this problem (no expert solution)

    @property
    def info(self) -> "FailureInfo":
        return FAILURE_TABLE[self]

    @property
    def is_transient(self) -> bool:
        """Transient failures are not recorded as done: a re-run retries the cell."""
        return FAILURE_TABLE[self].transient


class CellStatus(str, enum.Enum):
    CORRECT = "correct"
    INCORRECT = "incorrect"  # ran, produced wrong/NaN output
    FAILED = "failed"  # never produced a checked output (generation, parse, compile, crash, hang)
    IMPLAUSIBLE = "implausible"  # correct outputs at a time physics or the judge's clock rules out


@dataclass(frozen=True)
class FailureInfo:
    status: CellStatus
    """The cell's status when this class ends it."""
    transient: bool
    """Not recorded as done: a re-run retries the cell."""
    priority: int
    """When several ranks fail differently, the lowest number explains the evaluation best."""
    agent_retries: bool
    """Agent mode asks for another turn after a turn that ended this way."""


_F, _S = FailureClass, CellStatus
FAILURE_TABLE: dict[FailureClass, FailureInfo] = {
    # A forbidden call or a compile error explains everything that follows it.
    _F.FORBIDDEN_API: FailureInfo(_S.FAILED, False, 0, True),
    _F.RESOURCE_LIMIT: FailureInfo(_S.FAILED, False, 1, True),
    _F.COMPILE_ERROR: FailureInfo(_S.FAILED, False, 1, True),
    _F.PARSE_ERROR: FailureInfo(_S.FAILED, False, 2, True),
    _F.CUDA_FAULT: FailureInfo(_S.FAILED, False, 3, True),
    _F.RUNTIME_ERROR: FailureInfo(_S.FAILED, False, 4, True),
    _F.NAN: FailureInfo(_S.INCORRECT, False, 5, True),
    _F.INCORRECT: FailureInfo(_S.INCORRECT, False, 6, True),
    _F.TIMEOUT: FailureInfo(_S.FAILED, False, 7, True),
    _F.IMPLAUSIBLE: FailureInfo(_S.IMPLAUSIBLE, False, 8, True),
    # The harness failed, not the candidate: retried by a re-run, never fed back to a model.
    _F.HARNESS_ERROR: FailureInfo(_S.FAILED, True, 9, False),
    _F.RATE_LIMITED: FailureInfo(_S.FAILED, True, 20, False),
    _F.GENERATION_TIMEOUT: FailureInfo(_S.FAILED, True, 20, False),
    _F.SERVER_ERROR: FailureInfo(_S.FAILED, True, 20, False),
    _F.BUDGET_EXHAUSTED: FailureInfo(_S.FAILED, True, 20, False),
    _F.AUTH: FailureInfo(_S.FAILED, False, 20, False),
    _F.BAD_REQUEST: FailureInfo(_S.FAILED, False, 20, False),
    _F.NO_CODE: FailureInfo(_S.FAILED, False, 20, True),
    _F.NO_CANDIDATE: FailureInfo(_S.FAILED, False, 20, False),
}
assert set(FAILURE_TABLE) == set(FailureClass), "every failure class needs a row"


@dataclass(frozen=True, order=True)
class CellKey:
    """One (model, problem, attempt, mode) point of the sweep grid."""

    model: str
    problem: str
    attempt: int
    mode: str = "zeroshot"

    @property
    def cell_id(self) -> str:
        return f"{self.model}/{self.problem}/{self.attempt}/{self.mode}"


@dataclass
class Generation:
    """What the generate stage produced for one cell (one turn in agent mode)."""

    model: str
    problem: str
    attempt: int
    prompt: str = ""
    prompt_hash: str = ""
    response: str | None = None
    candidate_source: str | None = None
    failure: FailureClass | None = None
    message: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False  # served from kernels_cache, no API call made
    turn: int = 1
    tool: str = ""
    """Tools mode: the tool this step calls (check, benchmark, profile, run, submit), whose
    argument is `candidate_source`; "" otherwise, and on the step that ends an episode."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class TimingEvidence:
    """How an evaluation's speedup was measured: one instrument for both halves.

    Both the reference and the candidate ran in workers of the same kind (fresh, sandboxed,
    the same launch and gate path), on the same inputs, in alternating order; each figure is
    the judge's own clock over a batch of calls (gate opened -> answer) less the floor that
    a do-nothing run of the same batch costs there. A worker's own report is evidence only.
    Times in milliseconds per call."""

    instrument: str = "judge_window"
    """What timed both halves (engine/judge/timing/__init__.py says why this one)."""
    samples: int = 0
    calls_per_sample: int = 1
    gated: bool = False
    """Both halves queued behind a closed launch gate (cuda); False: they launch after it."""
    stopped: str = ""
    """Why sampling ended: stable | max_calls | max_time."""
    floor_ms: float = 0.0
    """What a batch of do-nothing calls costs on the same path (subtracted from both halves)."""
    floor_curve_ms: list[list[float]] = field(default_factory=list)
    """[[calls, ms], ...]: the floor as calibrated at a few batch sizes."""
    reference_rel_ci: float | None = None
    candidate_rel_ci: float | None = None
    """Relative half-width of the 95% interval of each half's median."""
    candidate_report_ratio: float | None = None
    """Median of the candidate worker's own time over the judge's figure (about 1 when
    honest; far below 1: the worker claims time the judge did not see it spend)."""
    reference_report_ratio: float | None = None
    """The same for the trusted reference worker: what an honest ratio looks like here."""
    unmeasurable: str = ""
    """Why no speedup is given: a call too short to tell apart from the floor ("" if timed)."""
    before_open_ms: float | None = None
    """Median time a candidate rank took from its inputs to its calls being queued."""
    impossible: list[str] = field(default_factory=list)
    """Reports of more time than the judge saw pass (a worker lying upwards)."""
    mode_source: str = ""
    """Where the timing mode (gated, calls_per_sample) came from: cached (the node's mode for
    this problem), calibrated (decided by this evaluation's reference probe, kept by the node
    from then on) or improvised (no launch gate here: used once, never kept)."""
    reference_expired: int = 0
    candidate_expired: int = 0
    """Samples left out because that half's launch gate expired in a held mode."""
    unmeasurable_kind: str = ""
    """Why no figure, as a word: too_short_reference | too_short_candidate | waits_on_host |
    no_gate | loaded | too_few_samples ("" when there is a figure)."""
    problem_calls_per_sample: int = 0
    """The problem's calls per sample; calls_per_sample is fewer where this evaluation's
    calls filled the launch queue behind a held gate."""
    cpu_pressure: float | None = None
    """Share of the timing phase in which some runnable task on the host waited for a CPU."""
    steal: float | None = None
    """Share of the host's CPU time taken by the hypervisor during the timing phase."""
    foreign_cpu: float | None = None
    """Share of the host's CPU capacity that processes other than this evaluation's used
    during the timing phase."""
    between_sd: float = 0.0
    """The spread between evaluations added to the interval (log space; engine/node/timing_stats.py)."""
    windows_ms: list[list[float]] = field(default_factory=list)
    """[[reference, candidate, reference's own, candidate's own], ...]: every sample's two
    windows on the judge's clock (the slowest rank, ms for the sample's calls, the floor not
    taken off), then what each worker's own clock said of the same calls (evidence only), so
    that anyone can redo the statistics or plot them."""
    empty_windows_ms: list[float] = field(default_factory=list)
    """The empty runs' windows the floor is the median of (cuda; none on cpu, whose floor is
    calibrated before the phase)."""
    sample_at_s: list[float] = field(default_factory=list)
    """When each sample ended (epoch seconds, wall clock): to line samples up with what else the
    machine logged meanwhile (GPU clocks, load)."""
    context_pace_us: list[list[float]] = field(default_factory=list)
    """cuda: [[reference worker, candidate worker], ...] per rank: how fast each worker's CUDA
    context dispatched kernels at set-up, before any candidate code (worker/run.py
    context_pace_us). A process draws its pace at birth: two that differ time one kernel
    differently (one H200: 0.241 or 0.249 ms for the same 64 queued copies)."""


@dataclass
class EvalResult:
    """What the evaluate stage measured for one candidate. Times in milliseconds."""

    correct: bool = False
    failure: FailureClass | None = None
    message: str = ""
    compiled: bool = False
    candidate_ms: float | None = None
    reference_ms: float | None = None
    speedup: float | None = None
    roofline_ms: float | None = None
    roofline_fraction: float | None = None
    world_size: int = 0
    device: str = ""
    size: str = ""
    hardware_fingerprint: str = ""
    harness_version: str = ""
    trials: int = 0
    flags: list[str] = field(default_factory=list)  # static anti-cheat findings
    failing_rank: int | None = None
    failing_trial: int | None = None
    max_abs_error: float | None = None
    build_log: str = ""
    log: str = ""
    node_seconds: float = 0.0
    compile_seconds: float = 0.0
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    """95% interval of the speedup (the median of the pairs' ratios, bootstrap over the pairs)."""
    sandbox: str = ""
    """How the candidate was confined, e.g. "bwrap+uid" or "none: <why>" (never silent)."""
    judge_clock_ratio: float | None = None
    """The worker's reported timed time over what the judge's own clock allows for it (<= 1
    for an honest worker; far below 1 means reported times the judge cannot account for)."""
    checked_timed_calls: int = 0
    """Timed calls whose outputs the judge compared with the reference (chosen in secret)."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """For a person to look at: what an `implausible` verdict (or a protection) rests on."""
    timing: TimingEvidence | None = None
    """How the times and the speedup were measured (None: not timed)."""
    gpus: str = ""
    """The node's GPUs this evaluation ran on ("2,3"); "" where no group was lent (a CPU
    node, `pkb eval`)."""
    gpu_link: str = ""
    """The weakest link inside that group, by nvidia-smi's name ("NV18", "SYS"); "uniform"
    where no topology could be measured, "self" for one GPU."""
    sharing: str = ""
    """How its node was shared: "groups" (other evaluations could hold the node's other
    GPUs) or "exclusive" (one evaluation per node); "" outside a node actor."""
    co_tenancy: int | None = None
    """The most other evaluations running on the same node at any moment of this one (0:
    it ran alone); None where not recorded (outside a node actor, or before GPU groups)."""


@dataclass
class TurnSummary:
    """One turn of an agent-mode cell as recorded: its outcome and the conversation step."""

    turn: int
    """1-based turn number."""
    failure: FailureClass | None = None
    correct: bool = False
    speedup: float | None = None
    roofline_fraction: float | None = None
    cost_usd: float = 0.0
    cached: bool = False
    """The generation came from kernels_cache: no API call, no new spend."""
    message: str = ""
    """The evaluation's (or generation's) message, cut to 500 characters."""
    prompt: str = ""
    """What the model was sent: the full prompt on turn 1, the feedback after."""
    response: str | None = None
    """What the model answered."""
    tool: str = ""
    """Tools mode: the tool this step called ("" in agent mode)."""
    tool_input: str = ""
    """Tools mode: the tool's argument (a module's source, or a script)."""
    device_s: float = 0.0
    """Tools mode: the tool call's device-seconds (world size x wall; GPU-seconds on cuda)."""


@dataclass
class CellResult:
    """One recorded cell: the journal's unit and the MLflow child run's content."""

    key: CellKey
    status: CellStatus
    generation: Generation
    evaluation: EvalResult | None
    failure: FailureClass | None = None
    message: str = ""
    world_size: int = 0
    hardware_fingerprint: str = ""
    harness_version: str = ""
    recorded_at: float = 0.0
    turns: list[TurnSummary] = field(default_factory=list)
    """Agent mode: one summary per turn (empty for a one-turn cell)."""
    identity: dict[str, str] = field(default_factory=dict)
    """Everything that changes this cell's result, as flat `key: value` strings (the sweep's
    device, world size, size, trials, problems source, harness version; the problem's
    version, the prompt hash, the sampling). Empty in records made before identities."""
    category: str = ""
    """The problem's category (collective, tensor, ...), for reports grouped by it."""
    version: int = RECORD_VERSION
    """The layout this record was written in (RECORD_VERSION); loading migrates older ones."""

    @property
    def record_id(self) -> str:
        """The journal's key: the cell id and a digest of its identity, so the same cell made
        under other settings is another record, never a replacement of this one."""
        return record_id_of(self.key, self.identity)

    @property
    def speedup(self) -> float | None:
        return self.evaluation.speedup if self.evaluation else None

    def to_json(self) -> str:
        return json.dumps(_to_plain(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CellResult:
        """A stored record, migrated to RECORD_VERSION. Raises RecordError naming an unknown
        key (e.g. `evaluation.speedup_p50`) or a version newer than this pkb writes."""
        if not isinstance(d, dict):
            raise RecordError(f"a record is a JSON object, not {type(d).__name__}")
        version = d.get("version", 1)  # records written before versions carry none
        if not isinstance(version, int) or not 1 <= version <= RECORD_VERSION:
            raise RecordError(f"record version {version!r}: this pkb reads versions 1 to "
                              f"{RECORD_VERSION} (a newer pkb wrote it?)")
        _check_keys(cls, d, "")
        ev = d.get("evaluation")
        turns = d.get("turns") or []
        if not isinstance(turns, list):
            raise RecordError(f"key 'turns': a list of turn summaries, not {type(turns).__name__}")
        return cls(
            key=_from_plain(CellKey, d["key"], "key"),
            status=CellStatus(d["status"]),
            generation=_from_plain(Generation, d["generation"], "generation"),
            evaluation=_from_plain(EvalResult, ev, "evaluation") if ev is not None else None,
            failure=FailureClass(d["failure"]) if d.get("failure") else None,
            message=d.get("message", ""),
            world_size=d.get("world_size", 0),
            hardware_fingerprint=d.get("hardware_fingerprint", ""),
            harness_version=d.get("harness_version", ""),
            recorded_at=d.get("recorded_at", 0.0),
            turns=[_turn_summary(t, f"turns[{i}]") for i, t in enumerate(turns)],
            identity={str(k): str(v) for k, v in (d.get("identity") or {}).items()},
            category=d.get("category", ""),
        )


def _turn_summary(d: Any, where: str) -> TurnSummary:
    summary = _from_plain(TurnSummary, d, where)
    # Version 1 wrote `correct` as 0.0 / 1.0.
    summary.correct = bool(summary.correct)
    return summary


def record_id_of(key: CellKey, identity: dict[str, str]) -> str:
    """`<cell id>@<identity digest>`; the bare cell id for a record without an identity."""
    return f"{key.cell_id}@{identity_digest(identity)}" if identity else key.cell_id


def identity_digest(identity: dict[str, str]) -> str:
    """12 hex digits of sha256 over the identity's canonical JSON."""
    import hashlib

    canon = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:12]


HARNESS_KEY = "harness_version"
SOURCE_KEY = "problems.source"
SWEEP_KEY_PREFIXES = ("eval.", SOURCE_KEY, HARNESS_KEY)
"""An identity's sweep-wide keys (driver/identity.py writes them, report/combine.py
compares them over every cell of every sweep): the `eval.*` settings, the problems source
and the harness version."""


def is_sweep_key(key: str) -> bool:
    return key.startswith(SWEEP_KEY_PREFIXES)


MADE_BEFORE_THE_KEY = {"eval.exclusive": "true"}
"""Sweep-wide keys added after cells were recorded, with what those cells were made with:
before GPU groups every node ran one evaluation at a time, which is eval.exclusive=true. A
sweep made then resumes (or is compared) under that value, and is refused under another."""


def identity_value(identity: dict[str, str], key: str) -> str | None:
    """A cell's value of an identity key; for a key added later, what cells made before it
    were made with; None where unknown."""
    return identity.get(key, MADE_BEFORE_THE_KEY.get(key))


def status_of(evaluation: EvalResult) -> CellStatus:
    if evaluation.correct:
        return CellStatus.CORRECT
    if evaluation.failure is None:
        return CellStatus.FAILED
    return FAILURE_TABLE[evaluation.failure].status


def _to_plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [_to_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _to_plain(v) for k, v in obj.items()}
    return obj


def to_plain(obj: Any) -> Any:
    """A dataclass record as JSON-ready builtins (enums become their values)."""
    return _to_plain(obj)


def _check_keys(cls: type, d: dict[str, Any], where: str) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(k for k in d if k not in names)
    if unknown:
        key = f"{where}.{unknown[0]}" if where else unknown[0]
        raise RecordError(f"unknown key {key!r} in a {cls.__name__} (known: {', '.join(sorted(names))})")


def _from_plain(cls: type, d: Any, where: str = "") -> Any:
    if not isinstance(d, dict):
        raise RecordError(f"key {where or cls.__name__!r}: a JSON object, not {type(d).__name__}")
    _check_keys(cls, d, where)
    kwargs = dict(d)
    if kwargs.get("failure"):
        kwargs["failure"] = FailureClass(kwargs["failure"])
    if cls is EvalResult and isinstance(kwargs.get("timing"), dict):
        kwargs["timing"] = _from_plain(TimingEvidence, kwargs["timing"], f"{where}.timing")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise RecordError(f"key {where or cls.__name__!r}: {exc}") from exc


def from_plain(cls: type, d: dict[str, Any], where: str = "") -> Any:
    """Inverse of to_plain for Generation, EvalResult and TurnSummary. Raises RecordError
    naming an unknown key (`where` prefixes it, e.g. "outcome")."""
    return _from_plain(cls, d, where)
