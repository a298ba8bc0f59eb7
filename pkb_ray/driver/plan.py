"""Planning: the grid of cells with the identity each will be recorded under, which of them
a resumed sweep still owes, and the header that says so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.identity import cell_identity
from pkb_ray.driver.pipeline import CellState
from pkb_ray.records import CellKey

if TYPE_CHECKING:
    from pkb_ray.generation.prompt import EvalContext
    from pkb_ray.problems.spec import Problem


def plan_cells(models: list[str], problems: list[str], attempts: int, mode: str) -> list[CellKey]:
    """Attempt-major, then problem, then model: the first cells to finish cover every
    (model, problem) once, and consecutive API calls alternate between providers."""
    return [
        CellKey(model=m, problem=p, attempt=a, mode=mode)
        for a in range(1, attempts + 1)
        for p in problems
        for m in models
    ]


def pending_cells(cells: list[CellKey], done_ids: set[str]) -> list[CellKey]:
    return [c for c in cells if c.cell_id not in done_ids]


def without_missing_experts(cells: list[CellKey], has_expert: dict[str, bool]) -> list[CellKey]:
    """The `expert` pseudo-model only where a problem ships an expert solution: a problem
    without one is not a failure of the experts, and would drag their pass@k down."""
    return [c for c in cells if c.model != "expert" or has_expert.get(c.problem, False)]


def device_refusals(models: list[ModelConfig], device: str) -> list[str]:
    """Why each model that cannot run on `device` is refused (its `devices` list)."""
    return [
        f"model {m.name} runs on {', '.join(m.devices)} only (`devices` in conf/model/{m.name}.yaml) "
        f"and this sweep evaluates on {device}"
        for m in models if device not in m.devices
    ]


def prompt_hashes(problems: dict[str, Problem], context: EvalContext) -> dict[str, str]:
    """Each problem's first-turn prompt hash for this evaluation: the same text the
    generation actors build, so the same hash their kernels_cache keys hold."""
    from pkb_ray.generation.prompt import build_prompt

    return {pid: build_prompt(p, None, context).hash for pid, p in problems.items()}


@dataclass
class SweepPlan:
    """Every cell this invocation covers, each with the identity it is recorded under."""

    cells: list[CellState]
    problems_per_model: dict[str, int]
    attempts: int
    sweep_settings: dict[str, str]
    notes: list[str] = field(default_factory=list)
    """Said before the header (e.g. which problems ship an expert solution)."""

    def planned_ids(self) -> dict[str, str]:
        """cell id -> the record id this invocation records it under."""
        return {c.key.cell_id: c.record_id for c in self.cells}

    def pending(self, done_record_ids: set[str]) -> list[CellState]:
        return [c for c in self.cells if c.record_id not in done_record_ids]

    def size_text(self) -> str:
        """`N cells = M models x P problems x A attempts`, or per model when models cover
        different problems (`expert` covers only problems with an expert solution)."""
        counts = self.problems_per_model
        total = len(self.cells)
        attempts = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        per = set(counts.values())
        if len(per) == 1:
            n = per.pop()
            models = f"{len(counts)} model{'s' if len(counts) != 1 else ''}"
            grid = f"{models} x {n} problem{'s' if n != 1 else ''} x {attempts}"
        else:
            grid = f"({' + '.join(f'{m}: {n}' for m, n in counts.items())} problems) x {attempts}"
        return f"{total} cells = {grid}"


def build_plan(cfg: RootConfig, models: list[ModelConfig], problems: dict[str, Problem],
               sweep: dict[str, str], context: EvalContext) -> SweepPlan:
    from pkb_ray.generation.models import is_pseudo

    keys = plan_cells([m.name for m in models], list(problems), cfg.attempts, cfg.mode.name)
    has_expert = {pid: p.expert_source is not None for pid, p in problems.items()}
    notes = []
    kept = without_missing_experts(keys, has_expert)
    if len(kept) < len(keys):
        notes.append(f"model expert: {sum(has_expert.values())} of {len(has_expert)} problems ship "
                     "an expert solution; only those are evaluated")
    hashes = prompt_hashes(problems, context) if any(not is_pseudo(m) for m in models) else {}
    agent = (cfg.mode.turns, cfg.mode.target_speedup) if cfg.mode.name == "agent" else None
    by_name = {m.name: m for m in models}
    cells = []
    for key in kept:
        model, problem = by_name[key.model], problems[key.problem]
        served = problem.reference_source if model.name == "reference" else problem.expert_source
        identity = cell_identity(sweep, model, problem.spec.version, hashes.get(key.problem),
                                 served, agent)
        cells.append(CellState(key, identity=identity))
    per_model = {m.name: sum(1 for k in kept if k.model == m.name and k.attempt == 1) for m in models}
    return SweepPlan(cells, per_model, cfg.attempts, sweep, notes)
