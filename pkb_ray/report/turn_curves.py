"""Agent mode's curves: pass@1 and fast1@1 after each turn, per model.

After turn t a cell counts as passed if any of its first t turns was correct (and faster
than the reference, for fast1). A cell that stopped early keeps its final state for later
turns. Values are averaged over every (problem, attempt) cell of the model.
"""

from __future__ import annotations

from collections import defaultdict

from pkb_ray.records import CellResult, TurnSummary


def _turn_flags(result: CellResult, max_turns: int) -> tuple[list[bool], list[bool]]:
    passed, fast = [], []
    ok = quick = False
    turns = result.turns or [
        TurnSummary(turn=1, correct=result.status.value == "correct", speedup=result.speedup)
    ]
    for t in range(max_turns):
        if t < len(turns):
            ok = ok or turns[t].correct
            speedup = turns[t].speedup
            quick = quick or (turns[t].correct and speedup is not None and speedup > 1.0)
        passed.append(ok)
        fast.append(quick)
    return passed, fast


def turn_curves(results: list[CellResult]) -> dict[str, dict[str, list[float]]]:
    """model -> {"pass@turn": [...], "fast1@turn": [...]} for agent-mode cells."""
    by_model: dict[str, list[CellResult]] = defaultdict(list)
    for r in results:
        if r.key.mode == "agent":
            by_model[r.key.model].append(r)
    curves = {}
    for model, cells in sorted(by_model.items()):
        max_turns = max(max(len(c.turns), 1) for c in cells)
        flags = [_turn_flags(c, max_turns) for c in cells]
        curves[model] = {
            "pass@turn": [sum(p[t] for p, _ in flags) / len(cells) for t in range(max_turns)],
            "fast1@turn": [sum(f[t] for _, f in flags) / len(cells) for t in range(max_turns)],
        }
    return curves
