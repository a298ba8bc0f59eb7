"""A cell in flight: the turns its mode's stages add, each a generate -> build -> evaluate
round, until its mode finalises it into the CellResult the journal records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pkb_ray.records import CellKey, EvalResult, Generation, record_id_of

if TYPE_CHECKING:
    from pkb_ray.engine import BuildResult


@dataclass
class Turn:
    """One generate -> build -> evaluate round of a cell."""

    generation: Generation
    build: BuildResult | None = None
    evaluation: EvalResult | None = None
    tool: Any = None
    """Tools mode: the agent.tools.ToolOutcome of this turn's tool call (profile and run
    have no `evaluation`; check, benchmark and submit have both)."""

    def outcome(self) -> EvalResult | None:
        """The turn's result: its evaluation (the engine's verdict merged the build into it),
        or, where the build failed and nothing was evaluated, the engine's record of that."""
        if self.build is not None and not self.build.ok:
            from pkb_ray.engine import not_built

            return not_built(self.build)
        return self.evaluation


@dataclass
class CellState:
    """One cell moving through the pipeline; agent mode adds turns to the same state."""

    key: CellKey
    turns: list[Turn] = field(default_factory=list)
    evaluator_losses: int = 0
    identity: dict[str, str] = field(default_factory=dict)
    """What the cell will be recorded under (driver/identity.py); empty in bare tests."""

    @property
    def record_id(self) -> str:
        """The journal key this cell is recorded under (CellResult.record_id)."""
        return record_id_of(self.key, self.identity)

    @property
    def turn(self) -> int:
        """The number of the turn being generated or last generated (1-based)."""
        return max(1, len(self.turns))

    @property
    def current(self) -> Turn:
        return self.turns[-1]
