"""mode=agent, the feedback agent: after each evaluated turn the model is told how its
candidate fared (agent/feedback.py) and asked for a revision, up to `mode.turns` turns or a
correct turn at `mode.target_speedup`. The cell's result is its best turn's.

Each evaluated turn goes to the sweep's turn log as it lands, so a resumed sweep rebuilds
the conversation from kernels_cache and the log and evaluates no turn twice.
"""

from __future__ import annotations

from pkb_ray.config.flat import canonical
from pkb_ray.config.schema import RootConfig
from pkb_ray.modes.base import Mode, StageSettings, StepCurves
from pkb_ray.modes.cell import CellState
from pkb_ray.modes.zeroshot import GenerationStages, best_turn_result
from pkb_ray.records import CellResult


class FeedbackStages(GenerationStages):
    def __init__(self, run: StageSettings) -> None:
        from pkb_ray.agent.feedback import AgentPolicy

        super().__init__(run)
        self.policy = AgentPolicy(run.cfg.mode.turns, run.cfg.mode.target_speedup)

    def history(self, state: CellState) -> list[dict] | None:
        from pkb_ray.agent.feedback import conversation

        return conversation(state) if state.turns else None

    def continue_cell(self, state: CellState) -> bool:
        return self.policy.continue_cell(state)


class Agent(Mode):
    name = "agent"
    title = "feedback agent"
    curves = StepCurves(names=("pass@turn", "fast1@turn"), step="turn", axis="turn",
                        plot="pass_at_turn.png")
    keeps_turn_log = True
    takes_turns = True

    def config_errors(self, cfg: RootConfig) -> list[str]:
        if cfg.turns is not None and cfg.turns < 1:
            return [f"turns={cfg.turns!r} must be an integer >= 1"]
        return []

    def identity_settings(self, cfg: RootConfig) -> dict[str, str]:
        return {"mode.turns": canonical(cfg.mode.turns), "mode.target_speedup": canonical(cfg.mode.target_speedup)}

    def stages(self, run: StageSettings) -> FeedbackStages:
        return FeedbackStages(run)

    def finalize(self, state: CellState, category: str = "") -> CellResult:
        return best_turn_result(state, category)

    def replies(self, cfg: RootConfig) -> int:
        return cfg.mode.turns

    def replies_note(self, cfg: RootConfig) -> str:
        return f" x up to {cfg.mode.turns} turns (mode.turns; later turns also resend the conversation)"
