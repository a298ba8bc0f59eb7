"""The per-problem view of a sweep (problems as rows, models as columns) and the flat table
of cells that MLflow holds per sweep."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pkb_ray.modes import recorded_mode
from pkb_ray.records import CellResult, CellStatus, EvalResult
from pkb_ray.report.findings import is_finding
from pkb_ray.report.metrics import is_launch_bound

# Short names of failure classes, for table cells and the heatmap.
SHORT = {
    "incorrect": "wrong", "nan": "nan", "compile_error": "compile", "runtime_error": "runtime",
    "cuda_fault": "fault", "resource_limit": "bound", "timeout": "timeout", "forbidden_api": "forbidden",
    "parse_error": "parse", "implausible": "implausible", "harness_error": "harness",
    "no_code": "no code", "no_candidate": "none", "auth": "auth", "bad_request": "bad req",
    "rate_limited": "rate", "generation_timeout": "gen t/o", "server_error": "server",
    "budget_exhausted": "budget",
}


def column_label(model: str, mode: str) -> str:
    return recorded_mode(mode).label(model, "{base} ({mode})")


@dataclass
class ProblemCell:
    """One (model, problem) entry: the best correct attempt, or why none was correct."""

    attempts: int
    correct: int
    best_speedup: float | None = None
    best_ci: tuple[float | None, float | None] = (None, None)
    launch_bound: bool = False
    finding: bool = False
    """The best correct attempt is a harness finding (a self-check figure off 1.0)."""
    failure: str | None = None
    """The most common failure class when no attempt was correct (`implausible` included)."""

    def text(self) -> str:
        share = f"{self.correct}/{self.attempts} " if self.attempts > 1 else ""
        if self.correct:
            if self.best_speedup is None:
                return f"{share}ok"
            mark = " (launch-bound)" if self.launch_bound else " (finding)" if self.finding else ""
            return f"{share}{self.best_speedup:.2f}x{mark}"
        return f"{share}{self.failure or 'failed'}"


def problem_cell(attempts: list[CellResult]) -> ProblemCell:
    correct = [c for c in attempts if c.status == CellStatus.CORRECT]
    cell = ProblemCell(attempts=len(attempts), correct=len(correct))
    if correct:  # a harness finding is best only when every correct attempt is one
        best = max(correct, key=lambda c: (not is_finding(c), c.speedup if c.speedup is not None else float("-inf")))
        cell.best_speedup = best.speedup
        ev = best.evaluation
        cell.best_ci = (ev.speedup_ci_low, ev.speedup_ci_high) if ev else (None, None)
        cell.launch_bound = is_launch_bound(best)
        cell.finding = is_finding(best)
    else:
        classes = Counter((c.failure.value if c.failure else c.status.value) for c in attempts)
        cell.failure = classes.most_common(1)[0][0]
    return cell


@dataclass
class ProblemTable:
    columns: list[str]
    """Model (mode) labels, in order."""
    rows: list[tuple[str, str, dict[str, ProblemCell]]]
    """(problem, category, column label -> cell); a model that did not cover a problem has
    no entry (`model=expert` covers only problems with an expert solution)."""

    def as_dicts(self) -> list[dict[str, str]]:
        out = []
        for problem, category, cells in self.rows:
            row = {"problem": problem, "category": category or "-"}
            row.update({c: cells[c].text() if c in cells else "-" for c in self.columns})
            out.append(row)
        return out


def problem_table(results: list[CellResult]) -> ProblemTable:
    columns: list[str] = []
    by_problem: dict[str, dict[str, list[CellResult]]] = {}
    category: dict[str, str] = {}
    for r in sorted(results, key=lambda r: (r.key.model, r.key.mode)):
        label = column_label(r.key.model, r.key.mode)
        if label not in columns:
            columns.append(label)
        by_problem.setdefault(r.key.problem, {}).setdefault(label, []).append(r)
        category[r.key.problem] = category.get(r.key.problem) or r.category
    rows = [(p, category.get(p, ""), {label: problem_cell(cells) for label, cells in per.items()})
            for p, per in sorted(by_problem.items(), key=lambda kv: (category.get(kv[0], ""), kv[0]))]
    return ProblemTable(columns, rows)


FIGURES = ("speedup", "speedup_ci_low", "speedup_ci_high", "roofline_fraction", "candidate_ms", "reference_ms")
"""What an evaluation measured of a cell, by the EvalResult field that holds each."""


def figures(ev: EvalResult | None) -> dict[str, float | None]:
    """An evaluation's FIGURES by name; each None where the cell has no evaluation."""
    return {name: getattr(ev, name) if ev else None for name in FIGURES}


def cell_table(results: list[CellResult]) -> dict[str, list]:
    """One row per cell, as columns (what `mlflow.log_table` takes): model, problem,
    category, attempt, mode, status, failure, speedup and its interval, roofline fraction,
    times, flags and cost."""
    cols: dict[str, list] = {k: [] for k in (
        "model", "problem", "category", "attempt", "mode", "status", "failure", "speedup",
        "speedup_ci_low", "speedup_ci_high", "roofline_fraction", "candidate_ms",
        "reference_ms", "flags", "cost_usd")}
    for r in sorted(results, key=lambda r: (r.key.model, r.key.problem, r.key.attempt, r.key.mode)):
        ev = r.evaluation
        values = {
            "model": r.key.model, "problem": r.key.problem, "category": r.category,
            "attempt": r.key.attempt, "mode": r.key.mode, "status": r.status.value,
            "failure": r.failure.value if r.failure else "",
            **figures(ev),
            "flags": ",".join(ev.flags) if ev else "",
            "cost_usd": r.generation.cost_usd,
        }
        for k, v in values.items():
            cols[k].append(v)
    return cols
