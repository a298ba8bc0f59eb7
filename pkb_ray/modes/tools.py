"""mode=tools, the tool agent: a cell is one tool-agent episode, and each of its pipeline
turns is one tool call.

    generate -> AgentService.advance (the model's next tool call, on the driver's node)
    build    -> prebuild of the module, for check, benchmark, profile and submit on cuda
    evaluate -> NodeEvaluator.run_tool(world_size, execute_on_node, ...) on a slot (one GPU
                group), queued with every other task

So an episode waiting for its model holds no evaluator, and its tool calls share the
cluster's nodes with every other cell's. The episode's journal and kernels_cache make it
resumable: a re-run repeats no model request and no finished tool call. The cell's result
is its submission's evaluation, its cost the whole episode's.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Sequence

from pkb_ray.config.flat import flatten
from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.modes.base import Mode, StageSettings, StepCurves
from pkb_ray.modes.cell import CellState, Turn
from pkb_ray.modes.stages import RayStages
from pkb_ray.records import CellResult, CellStatus, FailureClass, Generation, identity_digest, status_of

EPISODES_DIR = "agent"
"""Under the sweep's directory: the episodes' journals (a fresh sweep archives it)."""


def episode_journal_path(sweep_dir: Path, state: CellState) -> str:
    """`<sweep>/agent/<model>/<problem>/<attempt>-<identity digest>.jsonl`: a cell recorded
    under other settings (a new problem version) gets its own episode."""
    k = state.key
    digest = identity_digest(state.identity) if state.identity else "bare"
    return str(sweep_dir / EPISODES_DIR / k.model / k.problem / f"{k.attempt}-{digest}.jsonl")


def outcome_of(turn: Turn) -> Any:
    """What the model is told of the turn's tool call (an agent.tools.ToolOutcome): its
    outcome from the evaluator, or, when the module did not build (cuda's build stage), the
    build failure as check would have shown it."""
    from pkb_ray.agent.executor import outcome_of_evaluation
    from pkb_ray.agent.tools import Tool

    if turn.tool is not None:
        return turn.tool
    outcome = turn.outcome()
    if outcome is None:  # cannot happen: a tool turn ends with a build failure or an outcome
        raise RuntimeError(f"turn {turn.generation.turn} has no outcome")
    tool = Tool(turn.generation.tool)
    compile_s = turn.build.compile_seconds if turn.build else 0.0
    return outcome_of_evaluation(tool, outcome, device_s=0.0, wall_s=compile_s)


class ToolStages(RayStages):
    def __init__(self, run: StageSettings) -> None:
        from pkb_ray.agent.service import AgentService

        super().__init__(run, AgentService, run.cfg.mode.tools, os.path.abspath(run.cfg.generation.cache_dir),
                         run.context)

    def builds(self, state: CellState) -> bool:
        """check, benchmark, profile and submit take a module; `run` takes a script."""
        from pkb_ray.agent.tools import Tool

        return state.current.generation.tool in {Tool.CHECK.value, Tool.BENCHMARK.value, Tool.SUBMIT.value,
                                                 Tool.PROFILE.value}

    # -- Stages protocol -------------------------------------------------------------
    def generate(self, state: CellState) -> Any:
        outcome = outcome_of(state.current) if state.turns else None
        return self.actors[state.key.model].advance.remote(
            state.key, self.eval_request(state, ""), episode_journal_path(self.run.sweep_dir, state), outcome,
            self.run.api_allowed())

    def evaluate(self, slot: Any, state: CellState) -> Any:
        from pkb_ray.agent.executor import execute_on_node

        turn = state.current
        base = self.eval_request(state, "")
        return slot.actor.run_tool.remote(base.eval.world_size, execute_on_node, turn.generation.request, base,
                                          self.run.cfg.mode.tools, turn.build)

    def continue_cell(self, state: CellState) -> bool:
        """Every tool call's outcome goes back to its episode, which then ends or goes on
        (its end comes back from `generate` as a step without a tool)."""
        return bool(state.current.generation.tool)


def episode_result(state: CellState, category: str = "") -> CellResult:
    """A tool-agent cell: its result is the submission's evaluation (never a check's or a
    benchmark's), its cost every model call's, its turns every tool call."""
    submits = [t for t in state.turns if t.generation.tool == "submit" and t.outcome() is not None]
    last = state.current.generation
    # The episode's end carries its final answer and transcript from its journal, which
    # holds the steps an interrupted earlier run finished as well as this run's.
    final = getattr(last, "final", None) or (submits[-1].outcome() if submits else None)
    source = submits[-1].generation if submits else last
    # A tools cell ends only on the episode's end step (agent/service.py `_end`), whose
    # transcript holds every tool call the journal finished.
    transcript = getattr(last, "transcript", [])
    gens = [t.generation for t in state.turns]
    # Spend: the whole episode's, from its journal (the end step's); this run's steps alone
    # miss what a killed earlier run spent.
    spend = getattr(last, "episode_spend", None) or {
        "cost_usd": sum(g.cost_usd for g in gens), "latency_s": sum(g.latency_s for g in gens),
        "prompt_tokens": sum(g.prompt_tokens for g in gens),
        "completion_tokens": sum(g.completion_tokens for g in gens), "cached": all(g.cached for g in gens)}
    gen = Generation(**{f.name: getattr(source, f.name) for f in dataclasses.fields(Generation)})
    gen = dataclasses.replace(
        gen, tool="", turn=len(gens), cost_usd=spend["cost_usd"], latency_s=spend["latency_s"],
        prompt_tokens=spend["prompt_tokens"], completion_tokens=spend["completion_tokens"], cached=spend["cached"],
        response="\n\n".join(g.response for g in gens if g.response), prompt=gens[0].prompt,
        failure=None if final is not None else (last.failure or FailureClass.NO_CODE),
        message=last.message)
    if not submits and transcript and any(r.tool == "submit" for r in transcript):
        gen.candidate_source = [r for r in transcript if r.tool == "submit"][-1].tool_input
    if final is None:
        status, failure, message = CellStatus.FAILED, gen.failure, gen.message
    else:
        status, failure, message = status_of(final), final.failure, final.message
    return CellResult(
        key=state.key, status=status, generation=gen, evaluation=final, failure=failure, message=message,
        world_size=final.world_size if final else 0,
        hardware_fingerprint=final.hardware_fingerprint if final else "",
        harness_version=final.harness_version if final else "",
        turns=list(transcript), identity=dict(state.identity),
        category=category)


class Tools(Mode):
    name = "tools"
    title = "tool agent"
    curves = StepCurves(names=("pass@step", "fast1@step", "submitted@step", "submitted_fast1@step"),
                        step="tool call", axis="step (tool calls so far)", plot="pass_at_step.png")
    one_cell = "episode per cell: see mode.tools.limits"

    def identity_settings(self, cfg: RootConfig) -> dict[str, str]:
        """The episode's limits, tool sizes and tool protocol (not `tool_models`, a
        capability note)."""
        from pkb_ray.agent.model import TOOL_PROTOCOL

        out = {k: v for k, v in flatten("mode.tools", cfg.mode.tools).items() if k != "mode.tools.tool_models"}
        out["mode.tool_protocol"] = TOOL_PROTOCOL
        return out

    def refusals(self, cfg: RootConfig, models: Sequence[ModelConfig]) -> list[str]:
        """Every model must call tools."""
        from pkb_ray.agent.capability import ToolsUnsupported, require_tool_support

        refused = []
        for m in models:
            try:
                require_tool_support(m, list(cfg.mode.tools.tool_models), "mode.tools.tool_models")
            except ToolsUnsupported as exc:
                refused.append(str(exc))
        return refused

    def stages(self, run: StageSettings) -> ToolStages:
        return ToolStages(run)

    def finalize(self, state: CellState, category: str = "") -> CellResult:
        return episode_result(state, category)

    def api_cost_usd(self, cfg: RootConfig, cells: int, reply_usd: float | None,
                     most_reply_usd: float | None) -> tuple[float | None, float | None]:
        """Bounded by the episode's dollar limit; how much of it an episode spends is not known."""
        return None, cells * cfg.mode.tools.limits.usd

    def api_estimate(self, cfg: RootConfig, expected: float, ceiling: float, cells: int,
                     prompt_tokens: float, output_tokens: int) -> str:
        return (f"API estimate: at most ${ceiling:,.2f} for {cells} tool-agent episodes "
                f"(mode.tools.limits.usd = ${cfg.mode.tools.limits.usd:g} each)")
