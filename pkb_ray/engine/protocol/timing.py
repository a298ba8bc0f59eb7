"""What a timing phase's samples are, and the two rules both sides apply to them: the judges
take the samples and decide when to stop (judge/timing/), the node turns them into figures
and an interval (node/timing_evidence.py, node/timing_stats.py). A judge stops when the
interval the node will report is tight enough, so both read one definition of a figure
(LEAST_SHARE) and of a median's confidence (rel_ci_of_median).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

LEAST_SHARE = 0.01
"""One sample's figure is never below this share of the floor (per call): a window that
came out under the floor is noise around a call the median says is measurable (a sample
below the floor would otherwise be zero or negative, and its ratio infinite)."""


def rel_ci_of_median(samples: Sequence[float]) -> float:
    """Relative half-width of a distribution-free 95% confidence interval of the median
    (order statistics)."""
    n = len(samples)
    if n < 3:
        return math.inf
    s = sorted(samples)
    med = statistics.median(s)
    if med <= 0:
        return math.inf
    k = 1.96 * math.sqrt(n) / 2
    lo = s[max(0, math.floor(n / 2 - k))]
    hi = s[min(n - 1, math.ceil(n / 2 + k))]
    return (hi - lo) / 2 / med


@dataclass(frozen=True)
class TimingMode:
    """How a problem's calls are timed on a node: whether both halves are held behind the
    launch gate, and how many calls make a sample. A property of the problem, its size and
    world size, the node and the harness, never of one evaluation: two modes give two
    figures for one kernel (the reduce_scatter expert read 2.26x unheld and 1.27x held on
    one idle node), so the first evaluation decides it from the reference alone and the
    node keeps it (engine/node/timing_modes.py) for every later one."""
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
    """too_short_reference | too_short_candidate | waits_on_host | no_gate | loaded (the judge's);
    the node adds too_few_samples (verdict.py)."""
    problem_calls_per_sample: int = 0
    """The problem's calls per sample (its mode); calls_per_sample is fewer where this
    evaluation's calls filled the launch queue behind a held gate."""
    conditions: TimingConditions | None = None
    loaded: bool = False
    """The host was too loaded for a figure (`unmeasurable` says how)."""
    empty_window_ms: list = field(default_factory=list)
    """cuda: the windows of the empty runs beside the main loop's samples (rank 0's view of
    the slowest rank, ms for a sample's calls): the evidence floor_ms is the median of."""
    sample_at_s: list = field(default_factory=list)
    """Wall-clock time (epoch seconds) each sample ended on rank 0's judge."""
    context_pace_us: list = field(default_factory=list)
    """cuda: [[reference worker, candidate worker], ...] per rank: each worker's CUDA
    context's time per kernel, measured at set-up (worker/run.context_pace_us)."""
