"""Turning a finished CellState into the CellResult the journal and MLflow record."""

from __future__ import annotations

import dataclasses

from pkb_ray.driver.pipeline import CellState
from pkb_ray.records import CellResult, CellStatus, EvalResult, FailureClass, Generation, TurnSummary, status_of


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


def finalize_tools(state: CellState, category: str = "") -> CellResult:
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


def finalize(state: CellState, category: str = "") -> CellResult:
    if state.key.mode == "tools":
        return finalize_tools(state, category)
    outcomes = [t.outcome() for t in state.turns]
    best = best_turn(outcomes)
    gens = [t.generation for t in state.turns]
    # The cell's cost and tokens are those of every turn, its result that of the best one.
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
