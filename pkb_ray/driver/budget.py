"""A sweep's spend against `budget_usd`: what it starts from, what each recorded cell adds,
and whether new API calls may still start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from pkb_ray.records import CellResult, Generation


@dataclass
class Budget:
    """Per-sweep spend cap: once reached, no new API call starts (cached ones still may).

    Spend counts what this sweep paid: a generation replayed from kernels_cache was paid
    for once already (its cost still shows in the leaderboard's per-cell cost)."""

    limit_usd: float | None
    spent_usd: float = 0.0

    @classmethod
    def resumed(cls, limit_usd: float | None, records: Iterable[CellResult]) -> Budget:
        """The budget of a sweep whose journal already holds `records`."""
        return cls(limit_usd, sum(r.generation.cost_usd for r in records if not r.generation.cached))

    def charge(self, generations: Iterable[Generation]) -> None:
        """Add a recorded cell's generations (every turn's), the uncached ones."""
        self.spent_usd += sum(g.cost_usd for g in generations if not g.cached)

    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def exhausted_message(self) -> str:
        return (f"pkb: the sweep's spend ${self.spent_usd:.2f} reached budget_usd={self.limit_usd}: "
                "no new API calls were made after that; raise budget_usd and re-run to continue")
