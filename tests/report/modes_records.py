"""Cells of the three sweep modes, as real records, for the side-by-side and combined
reports' tests."""

from __future__ import annotations

from pkb_ray.records import FailureClass, TurnSummary
from tests.helpers import make_result

SETTINGS = {"eval.device": "cpu", "eval.world_size": "2", "eval.size": "small",
            "eval.trials": "3", "problems.source": "builtin", "harness_version": "t1"}


def cell(model, problem, mode, correct=True, speedup=1.5, ci=None, attempt=1, turns=(),
         **settings):
    """One recorded cell with an identity like the driver's: the sweep's settings (overridden
    by `settings`, dots spelled `__`), the problem's version, the model's id, the mode's own
    prompt and, in agent mode, its turns."""
    r = make_result(model, problem, attempt, correct=correct, speedup=speedup, ci=ci, mode=mode,
                    failure=None if correct else FailureClass.INCORRECT)
    r.identity = {**SETTINGS, **{k.replace("__", "."): v for k, v in settings.items()},
                  "problem_version": f"{problem}-v1", "model.model_id": f"prov/{model}",
                  "prompt_hash": f"{mode}-{problem}"}
    if mode == "agent":
        r.identity["mode.turns"] = "3"
    r.turns = [TurnSummary(turn=i, **t) for i, t in enumerate(turns, 1)]
    return r


def three_modes():
    """Models a and b: a swept in all three modes, b zero-shot and with tools (on p1 only)."""
    return {
        "zs": [cell("a", "p1", "zeroshot", speedup=1.2, ci=(1.1, 1.3)),
               cell("a", "p2", "zeroshot", correct=False),
               cell("b", "p1", "zeroshot", correct=False),
               cell("b", "p2", "zeroshot", correct=False)],
        "ag": [cell("a", "p1", "agent", speedup=1.5, ci=(0.9, 2.0),
                    turns=[dict(correct=False), dict(correct=True, speedup=1.5)]),
               cell("a", "p2", "agent", speedup=0.8, turns=[dict(correct=True, speedup=0.8)])],
        "tl": [cell("a", "p1", "tools", speedup=2.0, ci=(1.8, 2.2),
                    turns=[dict(tool="check", correct=True),
                           dict(tool="submit", correct=True, speedup=2.0)]),
               cell("a", "p2", "tools", speedup=1.1, ci=(1.05, 1.2),
                    turns=[dict(tool="submit", correct=True, speedup=1.1)]),
               cell("b", "p1", "tools", speedup=1.3,
                    turns=[dict(tool="benchmark", correct=True, speedup=1.3),
                           dict(tool="profile"), dict(tool="submit", correct=True, speedup=1.3)])],
    }
