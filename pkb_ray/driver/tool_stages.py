"""The pipeline's stages in tools mode (`mode=tools`, issue 17): a cell is one tool-agent
episode, and each of its pipeline turns is one tool call.

    generate -> AgentService.advance (the model's next tool call, on the driver's node)
    build    -> prebuild of the module, for check, benchmark, profile and submit on cuda
    evaluate -> NodeEvaluator.run_tool(world_size, execute_on_node, ...) on a slot (one GPU
                group), queued with every other task

So an episode waiting for its model holds no evaluator, and its tool calls share the
cluster's nodes with every other cell's. The episode's journal and kernels_cache make it
resumable: a re-run repeats no model request and no finished tool call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pkb_ray.agent.config import AgentConfig
from pkb_ray.agent.executor import execute_on_node, outcome_of_evaluation
from pkb_ray.agent.tools import Tool, ToolOutcome
from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.budget import Budget
from pkb_ray.driver.pipeline import CellState, Turn
from pkb_ray.driver.slots import EvalSlot
from pkb_ray.driver.stages import eval_request_for, model_actor_options, prompt_context, submit_build
from pkb_ray.engine.build import prebuild
from pkb_ray.engine.request import EvalRequest
from pkb_ray.records import identity_digest

_BUILT = {Tool.CHECK.value, Tool.BENCHMARK.value, Tool.SUBMIT.value, Tool.PROFILE.value}
"""Tools whose module is built on a CPU worker first on cuda (`run` takes a script)."""


def episode_journal_path(sweep_dir: Path, state: CellState) -> str:
    """`<sweep>/agent/<model>/<problem>/<attempt>-<identity digest>.jsonl`: a cell recorded
    under other settings (a new problem version) gets its own episode."""
    k = state.key
    digest = identity_digest(state.identity) if state.identity else "bare"
    return str(sweep_dir / "agent" / k.model / k.problem / f"{k.attempt}-{digest}.jsonl")


def outcome_of(turn: Turn) -> ToolOutcome:
    """What the model is told of the turn's tool call: its outcome from the evaluator, or,
    when the module did not build (cuda's build stage), the build failure as check would
    have shown it."""
    if turn.tool is not None:
        return turn.tool
    outcome = turn.outcome()
    if outcome is None:  # cannot happen: a tool turn ends with a build failure or an outcome
        raise RuntimeError(f"turn {turn.generation.turn} has no outcome")
    tool = Tool(turn.generation.tool)
    compile_s = turn.build.compile_seconds if turn.build else 0.0
    return outcome_of_evaluation(tool, outcome, device_s=0.0, wall_s=compile_s)


class ToolStages:
    def __init__(self, cfg: RootConfig, models: dict[str, ModelConfig], device: str, size: str,
                 budget: Budget, sweep_dir: Path, context: Any = None) -> None:
        import ray

        from pkb_ray.agent.service import AgentService

        self.cfg, self.models, self.device, self.size = cfg, models, device, size
        self.budget, self.sweep_dir = budget, sweep_dir
        self.agent_cfg: AgentConfig = cfg.mode.tools
        context = context or prompt_context(cfg, device, size)
        # The driver's node: the key, kernels_cache and the episodes' journals.
        self.services = {
            name: ray.remote(AgentService).options(**model_actor_options(model))
            .remote(model, self.agent_cfg, os.path.abspath(cfg.generation.cache_dir), context)
            for name, model in models.items()}
        self._build = ray.remote(num_cpus=1, max_retries=1)(prebuild) if device == "cuda" else None

    def base_request(self, state: CellState) -> EvalRequest:
        return eval_request_for(self.cfg, self.models[state.key.model], self.device, self.size, state, "")

    # -- Stages protocol -------------------------------------------------------------
    def generate(self, state: CellState) -> Any:
        outcome = outcome_of(state.current) if state.turns else None
        return self.services[state.key.model].advance.remote(
            state.key, self.base_request(state), episode_journal_path(self.sweep_dir, state), outcome,
            not self.budget.exhausted())

    def build(self, state: CellState) -> Any | None:
        if self._build is None or state.current.generation.tool not in _BUILT:
            return None
        return submit_build(self._build, self.cfg, state.current.generation.candidate_source)

    def evaluate(self, slot: EvalSlot, state: CellState) -> Any:
        turn = state.current
        base = self.base_request(state)
        return slot.actor.run_tool.remote(base.eval.world_size, execute_on_node, turn.generation.request, base,
                                          self.agent_cfg, turn.build)

    def ping(self, slot: EvalSlot) -> Any:
        return slot.actor.fingerprint.remote()

    def continue_cell(self, state: CellState) -> bool:
        """Every tool call's outcome goes back to its episode, which then ends or goes on
        (its end comes back from `generate` as a step without a tool)."""
        return bool(state.current.generation.tool)
