"""Live progress: counts per status and cost so far (rich)."""

from __future__ import annotations

import collections

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pkb_ray.records import CellStatus


class SweepProgress:
    def __init__(self, total: int, enabled: bool = True) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.cost_usd = 0.0
        self.total = total
        self._progress = Progress(
            TextColumn("[bold]sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            disable=not enabled,
        )
        self._task = self._progress.add_task(self._describe(), total=total)

    def _describe(self) -> str:
        pending = self.total - sum(self.counts.values())
        return (
            f"correct {self.counts[CellStatus.CORRECT.value]} | "
            f"incorrect {self.counts[CellStatus.INCORRECT.value]} | "
            f"failed {self.counts[CellStatus.FAILED.value]} | "
            f"deferred {self.counts['deferred']} | pending {pending} | ${self.cost_usd:.2f}"
        )

    def __enter__(self) -> "SweepProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.refresh()
        self._progress.stop()

    def update(self, status: str, cost_usd: float = 0.0) -> None:
        self.counts[status] += 1
        self.cost_usd += cost_usd
        self._progress.update(self._task, completed=sum(self.counts.values()), description=self._describe())

    def summary(self) -> str:
        return self._describe()
