"""What a sweep mode is: the strategy every `mode=` value registers (registry.py).

A mode declares, once, everything that differs between zero-shot answers, the feedback
agent and the tool agent, so that no other module asks which mode it is in:
- its config checks, and the settings of `mode.*` that change a cell's result (identity);
- the models it refuses before anything runs;
- its stages on Ray and whether it keeps a turn log (resume mid-cell);
- how a finished cell becomes the CellResult the journal records (finalisation);
- what its API spend is bounded by (the dry run's estimate);
- how reports and trackers show it: its title, whether names carry it, its step curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

from pkb_ray.config.schema import ModelConfig, RootConfig

if TYPE_CHECKING:
    from pkb_ray.generation.prompt import EvalContext
    from pkb_ray.modes.cell import CellState
    from pkb_ray.records import CellResult
    from pkb_ray.store.turn_log import TurnLog


@dataclass(frozen=True)
class StepCurves:
    """A mode whose cells take several steps: how the report draws its curves over them."""

    names: tuple[str, ...]
    """The curves' base names (report/turn_curves.py defines each)."""
    step: str
    """What one step is: `turn` (an answer and its evaluation) or `tool call`."""
    axis: str
    """The plot's x axis."""
    plot: str
    """The plot's file name beside the leaderboard."""


@dataclass(frozen=True)
class StageSettings:
    """What the sweep hands a mode to build its stages."""

    cfg: RootConfig
    models: Mapping[str, ModelConfig]
    device: str
    """As resolved (never `auto`)."""
    size: str
    context: EvalContext
    """What every prompt of the sweep describes (its hash is part of each API cell's identity)."""
    sweep_dir: Path
    api_allowed: Callable[[], bool]
    """False once the sweep's budget is spent: cached replies still replay, no new call is made."""
    turn_log: TurnLog | None = None
    """Where evaluated turns wait for their cell's end (modes that keep one)."""


class Mode:
    """One `mode=` value. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    """The `mode=` value, recorded in every cell's key."""
    title: ClassVar[str]
    """The name a reader knows it by (report headings and plots)."""
    in_names: ClassVar[bool] = True
    """Sweep names, run names and table labels carry the mode; the default mode's do not."""
    baseline: ClassVar[bool] = False
    """Its pass@1 is what the agents' step curves are read against (one answer, no feedback)."""
    curves: ClassVar[StepCurves | None] = None
    keeps_turn_log: ClassVar[bool] = False
    """Its cells span several evaluated turns, each kept as it lands so that a resumed sweep
    evaluates none of them again."""
    takes_turns: ClassVar[bool] = False
    """`mode.turns` (and `turns=`) apply: a cell is up to that many answered turns."""
    one_cell: ClassVar[str] = "turn"
    """What one cell of it makes where `mode.turns` does not apply, for the config's errors."""

    # -- config ------------------------------------------------------------------------
    def config_errors(self, cfg: RootConfig) -> list[str]:
        """What is wrong with the config's settings of this mode, one line per key (the
        registry checks `mode.turns` against `takes_turns`)."""
        return []

    def identity_settings(self, cfg: RootConfig) -> dict[str, str]:
        """The settings of `mode.*` that change a cell's result, as identity keys."""
        return {}

    def refusals(self, cfg: RootConfig, models: Sequence[ModelConfig]) -> list[str]:
        """Why each model that cannot run in this mode is refused (said before anything runs)."""
        return []

    # -- running -----------------------------------------------------------------------
    def stages(self, run: StageSettings) -> Any:
        """The stage implementations the pipeline drives (driver/pipeline.py `Stages`)."""
        raise NotImplementedError

    def finalize(self, state: CellState, category: str = "") -> CellResult:
        """A finished cell as the CellResult the journal records."""
        raise NotImplementedError

    # -- estimate ----------------------------------------------------------------------
    def replies(self, cfg: RootConfig) -> int:
        """Model replies a cell asks for at the most."""
        return 1

    def api_cost_usd(self, cfg: RootConfig, cells: int, reply_usd: float | None,
                     most_reply_usd: float | None) -> tuple[float | None, float | None]:
        """(expected, ceiling) USD of `cells` cells, given one reply's price at the assumed
        output tokens and at the model's max_output_tokens (None: no price known)."""
        replies = self.replies(cfg)
        return (None if reply_usd is None else cells * replies * reply_usd,
                None if most_reply_usd is None else cells * replies * most_reply_usd)

    def replies_note(self, cfg: RootConfig) -> str:
        """Words after `N replies` in the estimate: how many a cell may make."""
        return ""

    def api_estimate(self, cfg: RootConfig, expected: float, ceiling: float, cells: int,
                     prompt_tokens: float, output_tokens: int) -> str:
        """The estimate's first line: the total and what it assumes."""
        return (f"API estimate: about ${expected:,.2f} for {cells} replies{self.replies_note(cfg)}, at most "
                f"${ceiling:,.2f} (each reply at its model's max_output_tokens); assumes {prompt_tokens:,.0f} "
                f"prompt tokens (the mean prompt, at 4 characters a token) and {output_tokens:,} output tokens "
                "a reply, at litellm's list prices (else the model config's); replies already in "
                "kernels_cache cost nothing, counted here all the same")

    # -- reports -----------------------------------------------------------------------
    def label(self, base: str, form: str) -> str:
        """`base` with the mode in `form` (`{base}`, `{mode}`), or `base` alone where names
        leave the mode out."""
        return form.format(base=base, mode=self.name) if self.in_names else base


class Unregistered(Mode):
    """A mode name recorded in cells but not registered here (a report reads it as a name)."""

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]
        self.title = name  # type: ignore[misc]
