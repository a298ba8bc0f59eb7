"""mode=zeroshot, the default: one answer per cell, evaluated once.

Its stages (GenerationStages) and its finalisation (the best turn's result, every turn's
spend) also serve the feedback agent (agent.py), whose cells are several such turns.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from pkb_ray.modes.base import Mode, StageSettings
from pkb_ray.modes.cell import CellState
from pkb_ray.modes.stages import RayStages
from pkb_ray.records import CellResult, CellStatus, EvalResult, TurnSummary, status_of


class GenerationStages(RayStages):
    """Each turn is one reply of the model's GenerationService, built, then evaluated."""

    def __init__(self, run: StageSettings) -> None:
        from pkb_ray.generation.service import GenerationService

        cfg = run.cfg
        super().__init__(run, GenerationService, cfg.problems.source, os.path.abspath(cfg.generation.cache_dir),
                         cfg.generation.replay_only, context=run.context)

    def history(self, state: CellState) -> list[dict] | None:
        """The conversation so far, for a turn after the first (none in zero-shot)."""
        return None

    # -- Stages protocol -------------------------------------------------------------
    def generate(self, state: CellState) -> Any:
        return self.actors[state.key.model].generate.remote(
            state.key.problem,
            state.key.attempt,
            turn=len(state.turns) + 1,
            history=self.history(state),
            # Past the budget, cached generations still replay; uncached ones come back
            # as budget_exhausted (transient: deferred, not recorded) without a request.
            allow_api_calls=self.run.api_allowed(),
        )

    def evaluate(self, slot: Any, state: CellState) -> Any:
        log = self.run.turn_log
        done = log.get(state.record_id, state.turn) if log is not None else None
        if done is not None:  # evaluated before an interrupt: not redone
            import ray

            return ray.put(done)
        # The build tells the ranks where the prebuilt extensions are (no nvcc on the GPU).
        request = self.eval_request(state, state.current.generation.candidate_source or "")
        return slot.actor.evaluate.remote(request, state.current.build)

    def continue_cell(self, state: CellState) -> bool:
        return False


def best_turn(outcomes: list[EvalResult | None]) -> int:
    """Index of the best correct turn (fastest; earliest on ties), else of the last turn,
    which tells what went wrong."""
    correct = [i for i, ev in enumerate(outcomes) if ev is not None and ev.correct]
    if not correct:
        return len(outcomes) - 1
    return max(correct, key=lambda i: (outcomes[i].speedup or 0.0, -i))


def turn_summaries(state: CellState, outcomes: list[EvalResult | None]) -> list[TurnSummary]:
    rows = []
    for i, (turn, ev) in enumerate(zip(state.turns, outcomes), 1):
        rows.append(
            TurnSummary(
                turn=i,
                failure=ev.failure if ev is not None else turn.generation.failure,
                correct=bool(ev and ev.correct),
                speedup=ev.speedup if ev else None,
                roofline_fraction=ev.roofline_fraction if ev else None,
                cost_usd=turn.generation.cost_usd,
                cached=turn.generation.cached,
                message=(ev.message if ev else turn.generation.message)[:500],
                prompt=turn.generation.prompt,
                response=turn.generation.response,
            )
        )
    return rows


def best_turn_result(state: CellState, category: str = "") -> CellResult:
    """The cell's result is its best turn's; its cost and tokens are every turn's."""
    outcomes = [t.outcome() for t in state.turns]
    best = best_turn(outcomes)
    gens = [t.generation for t in state.turns]
    gen = dataclasses.replace(
        gens[best],
        cost_usd=sum(g.cost_usd for g in gens),
        latency_s=sum(g.latency_s for g in gens),
        prompt_tokens=sum(g.prompt_tokens for g in gens),
        completion_tokens=sum(g.completion_tokens for g in gens),
    )
    evaluation = outcomes[best]
    if evaluation is None:
        status, failure, message = CellStatus.FAILED, gen.failure, gen.message
    else:
        status, failure, message = status_of(evaluation), evaluation.failure, evaluation.message
    return CellResult(
        key=state.key,
        status=status,
        generation=gen,
        evaluation=evaluation,
        failure=failure,
        message=message,
        world_size=evaluation.world_size if evaluation else 0,
        hardware_fingerprint=evaluation.hardware_fingerprint if evaluation else "",
        harness_version=evaluation.harness_version if evaluation else "",
        turns=turn_summaries(state, outcomes) if len(state.turns) > 1 else [],
        identity=dict(state.identity),
        category=category,
    )


class ZeroShot(Mode):
    name = "zeroshot"
    title = "zero-shot"
    in_names = False
    baseline = True

    def stages(self, run: StageSettings) -> GenerationStages:
        return GenerationStages(run)

    def finalize(self, state: CellState, category: str = "") -> CellResult:
        return best_turn_result(state, category)
