"""What crosses from a rank process to the parent (RankAudit and its parts), and what the
parent decides (ProblemAudit, Finding). Plain dataclasses of numbers and strings: they
pickle through the ranks' pipes and serialise to JSON as they are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AuditPlan:
    """What every rank does for each problem (the same on every rank: the collectives of
    the timed calls must pair up)."""

    device: str
    """`cpu` (gloo ranks, host tensors) or `cuda` (one GPU per rank, NCCL)."""
    size: str
    """The size audited: `bench` on cuda (what a sweep times), `small` on cpu."""
    seeds: tuple[int, ...] = (1234, 4321, 777)
    """Seeds of the tolerance pass; the first two also make the inputs compared for degeneracy."""
    timing_budget_s: float = 0.25
    """Time spent on timed calls per problem, within min_calls..max_calls."""
    min_calls: int = 10
    max_calls: int = 100
    launch_calls: int = 5
    """Calls timed with the host's launches queued behind a sleeping kernel."""
    profiler_calls: int = 3
    profiler: bool = True
    """Run torch.profiler (CUPTI) over profiler_calls calls: kernel names and busy time."""
    truth_limit_s: float = 30.0
    """Longest truth.py may take for all seeds at this size on one rank (it runs on the
    rank's device, for every rank's output)."""


@dataclass(frozen=True)
class TensorDigest:
    """One input tensor, summarised on its device: equal tensors give equal digests."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    constant: bool
    """More than one element, all equal (args.is_constant)."""
    sums: tuple[float, ...]
    """Sum, sum of squares and an index-weighted sum in float64, then up to 64 sampled values."""


@dataclass(frozen=True)
class Ledger:
    """What one call of the reference asked of the hardware, counted at PyTorch's dispatcher
    (ledger.py): every collective with its tensors and group, every other op's tensors."""

    sent_bytes: float = 0.0
    recv_bytes: float = 0.0
    """Bytes this rank sends / receives over the links, by each collective's least traffic
    (comm.py)."""
    hbm_bytes: float = 0.0
    """Bytes read and written by every op, each on its own: no fusion, no cache."""
    matmul_flops: float = 0.0
    """torch.utils.flop_counter's count (matmuls, convolutions, attention)."""
    pointwise_flops: float = 0.0
    """One per element produced by a pointwise op, one per element read by a reduction."""
    ops: int = 0
    collectives: tuple[str, ...] = ()
    """`op:bytes` of each collective, in call order (first 32)."""
    unmodelled: tuple[str, ...] = ()
    """Communication ops the byte model does not know (their traffic is missing)."""
    groups_made: int = 0
    """Process groups the call created that this rank is in (dist.new_group and the like): a
    real workload makes them once, and a reference that makes them per call times
    communicator set-up."""

    @property
    def link_bytes(self) -> float:
        return max(self.sent_bytes, self.recv_bytes)

    @property
    def flops(self) -> float:
        return self.matmul_flops + self.pointwise_flops


@dataclass(frozen=True)
class CallTimes:
    """CUDA event times of back-to-back calls, each after a host barrier with L2 flushed."""

    event_ms: tuple[float, ...]
    host_ms: tuple[float, ...]
    """Host time to issue each call (perf_counter around the call, before synchronising)."""


@dataclass(frozen=True)
class QueuedTimes:
    """Calls issued while the GPU sleeps, timed by events from the sleep's end: the host's
    launch rate left out."""

    event_ms: tuple[float, ...]
    host_waited: bool
    """The host waited on the GPU inside a call (the sleep was over before the call
    returned): the queued time then includes the host's waits and says nothing."""
    sleep_ms: float


@dataclass(frozen=True)
class KernelSummary:
    """torch.profiler (CUPTI) over a few calls, per call."""

    calls: int
    busy_ms: float
    """Union of the device's kernel, copy and memset intervals, per call."""
    kernel_ms: float
    """Sum of kernel durations, per call (overlapping streams counted twice)."""
    nccl_ms: float
    kernels: int
    """Kernels per call."""
    top: tuple[str, ...]
    """The longest kernels by total time, `name: ms per call`."""
    profiler_flops: float = 0.0
    """torch.profiler's with_flops count, per call (a second opinion on Ledger's)."""


@dataclass(frozen=True)
class SeedError:
    """The reference's output against truth.py on one seed, on one rank: max over elements
    of |out - truth| / (atol + rtol |truth|), the comparator's rule (<= 1 passes)."""

    seed: int
    native: float | None = None
    """Against truth.py run in the inputs' own precision."""
    float64: float | None = None
    """Against truth.py run on the inputs upcast to float64 (the exact math, near enough)."""
    max_abs: float | None = None
    """max |out - truth| against the float64 truth."""
    int_mismatches: int = 0
    """Integer or bool output elements that differ from the native truth."""
    note: str = ""
    """Why a figure is missing (no truth.py, truth.py raised, out of time or memory)."""


@dataclass(frozen=True)
class RankAudit:
    """One rank's findings on one problem."""

    check: dict[str, Any]
    """check.check_one's payload (small size, the contract, the truth blob)."""
    digests: tuple[tuple[TensorDigest, ...], ...] = ()
    """Input digests for the plan's first two seeds."""
    ledger: Ledger | None = None
    times: CallTimes | None = None
    queued: QueuedTimes | None = None
    kernels: KernelSummary | None = None
    errors: tuple[SeedError, ...] = ()
    notes: tuple[str, ...] = ()
    stage_s: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """Something about a problem that makes it a weaker benchmark than it claims."""

    kind: str
    """One of verdict.FINDING_KINDS."""
    text: str
    reason: str = ""
    """A written reason that accepts it (--reasons FILE); empty when none."""


@dataclass
class ProblemAudit:
    """The parent's verdict on one problem at one world size."""

    problem: str
    world_size: int
    device: str
    size: str
    status: str
    """ok | finding (unexplained findings) | FAIL (incorrect or broken) | skip."""
    message: str = ""
    seconds: float = 0.0
    correct: str = ""
    """`matched` (truth.py agrees), `no truth` (upstream, or a native problem without one), or
    the failure."""
    warnings: list[str] = field(default_factory=list)
    reference_ms: float | None = None
    """Median over calls of the slowest rank's CUDA event time."""
    calls: int = 0
    self_ratio: float | None = None
    """Median of the even calls over median of the odd calls: the timing against itself."""
    queued_ratio: float | None = None
    """reference_ms over the median time with launches queued (about 1: not launch-bound)."""
    host_waits: bool = False
    busy_fraction: float | None = None
    """Device busy time (profiler) over reference_ms."""
    kernels: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)
    """The problem's roofline counts at this world size and size."""
    measured: dict[str, float] = field(default_factory=dict)
    """The ledger's counts of the reference (busiest rank)."""
    ratios: dict[str, float | None] = field(default_factory=dict)
    """counts / measured, per resource."""
    collectives: list[str] = field(default_factory=list)
    """`op:bytes` of the reference's first collectives (rank 0's ledger)."""
    roofline_ms: float | None = None
    roofline_fraction: float | None = None
    binding: str = ""
    """The resource whose bound sets roofline_ms: nvlink | flops | hbm."""
    tolerance: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Check -> why it did not run here."""
    notes: list[str] = field(default_factory=list)
    stage_s: dict[str, float] = field(default_factory=dict)
    """Seconds each stage of the rank task took, on the slowest rank."""

    @property
    def ok(self) -> bool:
        return self.status != "FAIL"

    @property
    def open_findings(self) -> list[Finding]:
        return [f for f in self.findings if not f.reason]
