"""Curves over an agent's steps, per model: the share of cells that held a correct (and a
faster) module after step s.

Agent mode (the feedback agent): one step is one turn (an answer and its evaluation).
- `pass@turn`[t-1]: one of the cell's turns 1..t was correct.
- `fast1@turn`[t-1]: one of its turns 1..t was correct with a speedup above 1.

Tools mode (the tool-using agent): one step is one tool call, in the order the agent made
them (`CellResult.turns`, one TurnSummary per call, `tool` naming it).
- `pass@step`[s-1]: one of calls 1..s was a `check`, `benchmark` or `submit` whose result
  was correct: the agent had a correct module in hand by step s. (A `check` proves it at
  the small size only; `profile` and `run` judge nothing and never count.)
- `fast1@step`[s-1]: one of calls 1..s was a `benchmark` or `submit` whose result was
  correct with a speedup above 1 (a `check` measures no time).
- `submitted@step`[s-1]: the cell's final answer was in by step s and correct. The final
  answer is the submitted module as the full judge evaluated it (the cell's status); it is
  in from the step of the `submit` call, or from the last step of an episode that a limit
  ended without one.
- `submitted_fast1@step`[s-1]: the same, and faster by the leaderboard's rule (correct, not
  launch-bound, speedup above 1).
A turn's own speedup carries no launch-bound flag: `fast1@turn` and `fast1@step` take it as
measured.

A cell keeps its state after its last step. A cell without recorded steps counts as one
step holding its final result (a one-turn agent cell; an episode that called no tool).
Each value is pass@1's estimator at that step: per problem the share of its attempts that
count, averaged over problems. So the last value of `pass@turn` and of `submitted@step` is
the leaderboard's pass@1 for that model and mode.

With k > 1 attempts (k: the most any problem has, as the leaderboard's `k` column), the
correctness curves (`pass@turn`, `pass@step`, `submitted@step`) also come as pass@k, named
`<curve>:k<k>` (e.g. `submitted@step:k3`): at each step, the unbiased estimator over the
problem's attempts (report/metrics.py `pass_at_k`), averaged over problems. The last value
of `submitted@step:k3` is then the leaderboard's pass@k.

The dict shape is the one the sweep hands to its trackers: model -> curve name -> one value
per step. Curve names differ between modes, so one model's agent and tools curves share a
dict; `CURVE_MODES` says which mode a name belongs to (the MLflow key `model/mode/name`).
Each mode names its curves, their axis and plot (modes/, `StepCurves`); this module says
what a curve counts after each step.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Callable

from pkb_ray.modes import MODES, recorded_mode
from pkb_ray.records import CellResult, CellStatus, TurnSummary
from pkb_ray.report.metrics import is_fast, pass_at_k

CURVE_MODES = {name: m.name for m in MODES if m.curves for name in m.curves.names}
"""Base curve name -> the sweep mode whose cells it is computed from (curve_mode() reads
pass@k names too)."""
PASS_K_CURVES = ("pass@turn", "pass@step", "submitted@step")
"""Curves that also come as pass@k when cells have several attempts."""

PASSING_TOOLS = ("check", "benchmark", "submit")
"""Tools whose result says whether a module is correct."""
TIMED_TOOLS = ("benchmark", "submit")
"""Tools whose result carries a measured speedup."""

Flags = dict[str, list[bool]]
"""Curve name -> per step, whether the cell counts after it."""


def k_curve(name: str, k: int) -> str:
    """The name of a curve's pass@k form: `submitted@step` -> `submitted@step:k3`."""
    return name if k <= 1 else f"{name}:k{k}"


def split_curve(name: str) -> tuple[str, int]:
    """(base curve name, k): `submitted@step:k3` -> (`submitted@step`, 3)."""
    base, _, k = name.partition(":k")
    return base, int(k) if k.isdigit() else 1


def curve_mode(name: str) -> str | None:
    return CURVE_MODES.get(split_curve(name)[0])


def curve_metric_key(model: str, name: str) -> str:
    """The tracker's metric key of one curve: `<model>/<mode>/<name>` with `@` spelled
    `_at_` and `:k` spelled `_k` (MLflow forbids both); e.g. `a/agent/pass_at_turn`,
    `a/tools/submitted_at_step_k3`."""
    key = name.replace("@", "_at_").replace(":k", "_k")
    return f"{model}/{curve_mode(name) or 'agent'}/{key}"


def _cumulative(hits: list[bool]) -> list[bool]:
    out, seen = [], False
    for hit in hits:
        seen = seen or hit
        out.append(seen)
    return out


def _faster(turn: TurnSummary) -> bool:
    return turn.correct and turn.speedup is not None and turn.speedup > 1.0


def agent_flags(cell: CellResult) -> Flags:
    turns = cell.turns or [TurnSummary(turn=1, correct=cell.status == CellStatus.CORRECT,
                                       speedup=cell.speedup)]
    return {"pass@turn": _cumulative([t.correct for t in turns]),
            "fast1@turn": _cumulative([_faster(t) for t in turns])}


def tools_flags(cell: CellResult) -> Flags:
    correct = cell.status == CellStatus.CORRECT
    turns = cell.turns or [TurnSummary(turn=1, correct=correct, speedup=cell.speedup, tool="submit")]
    submits = [i for i, t in enumerate(turns) if t.tool == "submit"]
    answered_at = submits[-1] if submits else len(turns) - 1
    answered = [i >= answered_at for i in range(len(turns))]
    return {
        "pass@step": _cumulative([t.tool in PASSING_TOOLS and t.correct for t in turns]),
        "fast1@step": _cumulative([t.tool in TIMED_TOOLS and _faster(t) for t in turns]),
        "submitted@step": [a and correct for a in answered],
        "submitted_fast1@step": [a and is_fast(cell, 1.0) for a in answered],
    }


def _curves(cells: list[CellResult], flags_of: Callable[[CellResult], Flags],
            names: tuple[str, ...]) -> dict[str, list[float]]:
    per_problem: dict[str, list[Flags]] = defaultdict(list)
    for c in cells:
        per_problem[c.key.problem].append(flags_of(c))
    steps = max(len(f[names[0]]) for fs in per_problem.values() for f in fs)
    k_max = max(len(fs) for fs in per_problem.values())
    # A cell that stopped early keeps its last state.
    at = lambda f, name, s: f[name][min(s, len(f[name]) - 1)]  # noqa: E731

    def curve(name: str, k: int) -> list[float]:
        return [sum(pass_at_k(len(fs), sum(at(f, name, s) for f in fs), k) for fs in per_problem.values())
                / len(per_problem) for s in range(steps)]

    out = {name: curve(name, 1) for name in names}
    if k_max > 1:
        out.update({k_curve(name, k_max): curve(name, k_max) for name in names if name in PASS_K_CURVES})
    return out


_FLAGS: dict[str, Callable[[CellResult], Flags]] = {"turn": agent_flags, "tool call": tools_flags}
"""What one step is (StepCurves.step) -> what a cell counts after each of its steps."""


def step_curves(results: list[CellResult]) -> dict[str, dict[str, list[float]]]:
    """model -> curve name -> one value per step, for the cells of modes with steps."""
    by_model_mode: dict[tuple[str, str], list[CellResult]] = defaultdict(list)
    for r in results:
        if recorded_mode(r.key.mode).curves is not None:
            by_model_mode[(r.key.model, r.key.mode)].append(r)
    curves: dict[str, dict[str, list[float]]] = {}
    for (model, mode), cells in sorted(by_model_mode.items()):
        steps = recorded_mode(mode).curves
        assert steps is not None
        curves.setdefault(model, {}).update(_curves(cells, _FLAGS[steps.step], steps.names))
    return curves


def mode_curves(curves: dict[str, dict[str, list[float]]], mode: str) -> dict[str, dict[str, list[float]]]:
    """The curves of one mode, for the models that have them."""
    out = {model: {n: v for n, v in named.items() if curve_mode(n) == mode}
           for model, named in curves.items()}
    return {model: named for model, named in out.items() if named}


_STYLE = {  # curve name -> (line style, marker, legend words)
    "pass@turn": ("-", "o", "correct"), "fast1@turn": ("--", "x", "correct and faster"),
    "pass@step": ("-", "o", "correct module found"),
    "fast1@step": ("--", "x", "faster module found"),
    "submitted@step": (":", "s", "submitted correct"),
    "submitted_fast1@step": ("-.", "^", "submitted faster"),
}
def plot_step_curves(curves: dict[str, dict[str, list[float]]], mode: str, path: Path,
                     zeroshot_pass: dict[str, float] | None = None,
                     subtitle: str = "") -> Path | None:
    """One mode's curves, one colour per model; `zeroshot_pass` (model -> pass@1) draws
    each model's zero-shot figure as a flat grey-dotted line to read the gain against."""
    shown = recorded_mode(mode)
    import logging

    import matplotlib

    matplotlib.use("Agg")  # headless: never needs a display
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    curves = mode_curves(curves, mode)
    if not curves:
        return None
    # Constrained layout keeps the legend beside the axes inside the figure (tight_layout warned).
    fig, ax = plt.subplots(figsize=(9.5, 4.5), layout="constrained")
    for model, named in curves.items():
        color = None
        for name, values in named.items():
            base, k = split_curve(name)
            ls, marker, words = _STYLE.get(base, ("-", ".", base))
            # pass@k lies above pass@1 in the same colour, thinner: the gain from more attempts.
            (line,) = ax.plot(range(1, len(values) + 1), values, ls=ls, marker=marker, color=color,
                              lw=1.5 if k == 1 else 0.8, alpha=1.0 if k == 1 else 0.6,
                              label=f"{model}: {words}" + (f", pass@{k}" if k > 1 else "") + f" ({name})")
            color = line.get_color()
        if zeroshot_pass and model in zeroshot_pass:
            ax.axhline(zeroshot_pass[model], color=color, lw=0.8, ls=(0, (1, 3)),
                       label=f"{model}: zero-shot pass@1")
    ax.set_xlabel(shown.curves.axis if shown.curves else "step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("pass@1 (pass@k: thin) after the step")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    # Beside the axes: four curves per model would hide the lines they name.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"{shown.title}: correct by step" + (f"\n{subtitle}" if subtitle else ""), fontsize=9)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
