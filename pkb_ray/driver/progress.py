"""Progress of a sweep: done/total with ETA, cells in flight per stage and per node, and
per-model counts and cost.

On a terminal: a live rich display. Without one (a log, CI, nohup): one plain line every
`every` recorded cells and a last one at the end, so a log of a 5000-cell sweep holds about
20 progress lines, not a redrawn bar per cell.
"""

from __future__ import annotations

import collections
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

from pkb_ray.console import wrap

STATUSES = ("correct", "incorrect", "failed", "implausible", "deferred")


@dataclass
class InFlight:
    """What the pipeline holds right now."""

    generating: int = 0
    building: int = 0
    queued: int = 0
    """Built candidates waiting for a free evaluator."""
    evaluating: dict[str, list[str]] = field(default_factory=dict)
    """Node label -> the cells being evaluated there (`allreduce a1`)."""

    def describe(self) -> str:
        """`evaluating allreduce a1, allgather a1 on node 6ffb4256 #0; generating 3`: which
        problems are on which node, then the stages that hold anything."""
        where = "; ".join(f"{', '.join(cells)} on {node}" for node, cells in sorted(self.evaluating.items()))
        waiting = ", ".join(f"{stage} {n}" for stage, n in (("generating", self.generating),
                                                            ("building", self.building),
                                                            ("queued", self.queued)) if n)
        return f"evaluating {where or 'nothing yet'}" + (f"; {waiting}" if waiting else "")


# Measured seconds per evaluated cell, for the estimate said before a sweep starts (the
# ETA then follows the sweep's own rate). cpu: 12 representative cells in 120 s on a 2-core
# machine shared with other work, one evaluator; cuda: 10 collective cells in 71 s on one
# H200x2 node.
SECONDS_PER_CELL = {"cpu": 10.0, "cuda": 7.1}
STARTUP_S = {"cpu": 20.0, "cuda": 30.0}
"""Ray, the evaluators and the trackers, before the first cell (cpu: 19 s measured)."""
CONTENTION = 1.29
"""How much slower a GPU evaluation runs beside the node's other GPU groups: two groups on
4 x H200 gave 1.54x the evaluations per hour of one at a time, each ~29% slower."""


def estimate_s(device: str, cells: int, evaluators: int = 1, shared: bool = False) -> float:
    """Seconds a sweep of `cells` evaluations should take (generation time not included).
    `shared`: GPU evaluations run beside others on their node (GPU groups)."""
    per = SECONDS_PER_CELL.get(device, SECONDS_PER_CELL["cuda"]) * (CONTENTION if shared and device == "cuda" else 1.0)
    return STARTUP_S.get(device, 30.0) + per * cells / max(1, evaluators)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class SweepProgress:
    def __init__(self, planned: dict[str, int], enabled: bool = True, interactive: bool | None = None,
                 every: int | None = None, out: IO[str] | None = None,
                 clock=time.monotonic, prior_s_per_cell: float | None = None, evaluators: int = 1) -> None:
        """`planned`: cells to run per model. `interactive`: None = whether `out` is a
        terminal. `every`: plain mode prints one line per this many cells (default: about
        20 lines per sweep). `prior_s_per_cell`: the device's measured seconds per cell over
        the `evaluators` that run at once, which the ETA uses until the sweep's own rate shows."""
        self.planned = dict(planned)
        self.total = sum(planned.values())
        self.counts: dict[str, collections.Counter] = {m: collections.Counter() for m in planned}
        self.cost_usd: dict[str, float] = collections.defaultdict(float)
        self.in_flight = InFlight()
        self.enabled = enabled
        self.out = out or sys.stderr
        self.interactive = self.out.isatty() if interactive is None else interactive
        self.every = every or max(1, self.total // 20)
        self._clock = clock
        self.prior_s_per_cell = prior_s_per_cell
        """Until the sweep's own rate shows, the ETA is this many seconds per cell left."""
        self.evaluators = max(1, evaluators)
        self.last = ""
        """The last recorded cell and its result (`reference/allreduce a1: correct 1.00x`)."""
        self._first_at: float | None = None
        """When the first cell landed: the sweep's rate is measured from there, as the time
        before it is mostly start-up (Ray, evaluators: 30 s on GPUs, where a cell takes 7)."""
        self._start = clock()
        self._live = None
        self._printed_at = 0

    # -- figures -------------------------------------------------------------------
    @property
    def done(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def eta_s(self) -> float | None:
        """Seconds left: at the device's measured rate until more cells than evaluators have
        landed (the first wave lands together, after start-up), then at the sweep's own rate
        since its first cell; without a measured rate, at the rate since the start (None
        before the first cell)."""
        done, left = self.done, self.total - self.done
        if self.prior_s_per_cell is not None:
            if done <= self.evaluators or self._first_at is None:
                return self.prior_s_per_cell * left
            return (self._clock() - self._first_at) / (done - 1) * left
        if not done:
            return None
        return (self._clock() - self._start) / done * left

    def _status_text(self, counts: collections.Counter) -> str:
        return ", ".join(f"{s} {counts[s]}" for s in STATUSES if counts[s])

    def line(self) -> str:
        """One plain line: totals, time, ETA, cost, what is in flight."""
        total = collections.Counter()
        for c in self.counts.values():
            total.update(c)
        eta = self.eta_s()
        elapsed = _duration(self._clock() - self._start)
        return (f"pkb: {self.done}/{self.total} cells ({self._status_text(total) or 'none yet'}) "
                f"${sum(self.cost_usd.values()):.2f}; {elapsed} elapsed"
                + (f", ETA {_duration(eta)}" if eta is not None and self.done < self.total else "")
                + (f"; last: {self.last}" if self.last else "")
                + f"; in flight: {self.in_flight.describe()}")

    def model_lines(self) -> list[str]:
        return [f"  {m}: {sum(self.counts[m].values())}/{n} ({self._status_text(self.counts[m]) or '-'}) "
                f"${self.cost_usd[m]:.2f}" for m, n in self.planned.items()]

    # -- updates -------------------------------------------------------------------
    def update(self, model: str, status: str, cost_usd: float = 0.0, last: str = "") -> None:
        """A cell ended (`status`); `last` says which and how, for the next lines."""
        if self._first_at is None:
            self._first_at = self._clock()
        self.counts.setdefault(model, collections.Counter())[status] += 1
        self.cost_usd[model] += cost_usd
        self.last = last or self.last
        if not self.enabled:
            return
        if self.interactive:
            self._refresh()
        elif self.done - self._printed_at >= self.every or self.done == self.total:
            self._printed_at = self.done
            print(wrap(self.line()), file=self.out, flush=True)

    def set_in_flight(self, in_flight: InFlight) -> None:
        self.in_flight = in_flight
        if self.enabled and self.interactive:
            self._refresh()

    # -- the live display ----------------------------------------------------------
    def _render(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        eta = self.eta_s()
        head = Table.grid(padding=(0, 1))
        head.add_row(Text("sweep", style="bold"), ProgressBar(total=max(1, self.total), completed=self.done, width=30),
                     Text(f"{self.done}/{self.total}  {_duration(self._clock() - self._start)} elapsed"
                          + (f", ETA {_duration(eta)}" if eta is not None else "")
                          + f"  ${sum(self.cost_usd.values()):.2f}"))
        models = Table(box=None, padding=(0, 1), show_edge=False)
        for col in ("model", "done", *STATUSES, "cost $"):
            models.add_column(col, justify="left" if col == "model" else "right")
        for m, n in self.planned.items():
            c = self.counts[m]
            models.add_row(m, f"{sum(c.values())}/{n}", *(str(c[s]) for s in STATUSES),
                           f"{self.cost_usd[m]:.2f}")
        lines = [Text("in flight: " + self.in_flight.describe())] + ([Text("last: " + self.last)] if self.last else [])
        return Group(head, *lines, models)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._render())

    def __enter__(self) -> "SweepProgress":
        self._start = self._clock()
        if self.enabled and self.interactive:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self._render(), console=Console(file=self.out), refresh_per_second=4,
                              transient=False)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
            self._live = None

    def summary(self) -> str:
        return self.line().removeprefix("pkb: ").split("; last: ")[0].split("; in flight")[0]
