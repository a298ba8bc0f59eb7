"""Planning: the grid of cells with the identity each will be recorded under, which of them
a resumed sweep still owes, and the header that says so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.identity import cell_identity, mode_settings
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


def at_world_size(problems: dict[str, Problem], world_size: int) -> tuple[dict[str, Problem], str | None]:
    """The problems that run at this world size, and a note naming the others (a problem
    written for 4 and 8 ranks has no meaning at 2: its cells would only fail)."""
    kept = {pid: p for pid, p in problems.items() if world_size in p.spec.world_sizes}
    left_out = sorted(set(problems) - set(kept))
    if not left_out:
        return kept, None
    shown = ", ".join(f"{pid} {list(problems[pid].spec.world_sizes)}" for pid in left_out[:8])
    more = f" and {len(left_out) - 8} more" if len(left_out) > 8 else ""
    return kept, (f"{len(left_out)} of {len(problems)} problems left out: they do not run at world size "
                  f"{world_size} (eval.world_size): {shown}{more}")


def pending_cells(cells: list[CellKey], done_ids: set[str]) -> list[CellKey]:
    return [c for c in cells if c.cell_id not in done_ids]


def with_candidates(cells: list[CellKey], has_candidate: dict[tuple[str, str], bool]) -> list[CellKey]:
    """Only cells whose model can have a candidate for the problem (its source says:
    `expert` only where a problem ships an expert solution). A problem without one is not
    a failure of that model, and would drag its pass@k down."""
    return [c for c in cells if has_candidate.get((c.model, c.problem), True)]


def device_refusals(models: list[ModelConfig], device: str) -> list[str]:
    """Why each model that cannot run on `device` is refused (its `devices` list)."""
    from pkb_ray.generation.sources import source_for

    refusals = []
    for m in models:
        runs_on = source_for(m).runs_on(m)
        if device not in runs_on:
            refusals.append(f"model {m.name} runs on {', '.join(runs_on) or 'no device'} only "
                            f"(`devices` in conf/model/{m.name}.yaml, and its provider "
                            f"{m.provider!r}) and this sweep evaluates on {device}")
    return refusals


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
    """Said before the header (e.g. how many problems have an expert solution)."""

    def planned_ids(self) -> dict[str, str]:
        """cell id -> the record id this invocation records it under."""
        return {c.key.cell_id: c.record_id for c in self.cells}

    def pending(self, done_record_ids: set[str]) -> list[CellState]:
        return [c for c in self.cells if c.record_id not in done_record_ids]

    def size_text(self) -> str:
        """`N cells = M models x P problems x A attempts`, or per model when models cover
        different problems (a model's source may lack a candidate for some: `expert` covers
        only problems with an expert solution)."""
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
    from pkb_ray.generation.sources import source_for

    keys = plan_cells([m.name for m in models], list(problems), cfg.attempts, cfg.mode.name)
    sources = {m.name: source_for(m) for m in models}
    has_candidate = {(name, pid): src.has_candidate(p)
                     for name, src in sources.items() for pid, p in problems.items()}
    notes = []
    for name, src in sources.items():
        n = sum(has_candidate[(name, pid)] for pid in problems)
        if n < len(problems):
            notes.append(f"model {name}: {n} of {len(problems)} problems have a candidate "
                         f"({src.what}); only those are evaluated")
    kept = with_candidates(keys, has_candidate)
    api = any(src.calls_api for src in sources.values())
    hashes = prompt_hashes(problems, context) if api else {}
    mode = mode_settings(cfg)
    by_name = {m.name: m for m in models}
    cells = []
    for key in kept:
        model, problem = by_name[key.model], problems[key.problem]
        identity = cell_identity(sweep, model, problem.spec.version, hashes.get(key.problem),
                                 sources[key.model].serve(problem), mode)
        cells.append(CellState(key, identity=identity))
    per_model = {m.name: sum(1 for k in kept if k.model == m.name and k.attempt == 1) for m in models}
    return SweepPlan(cells, per_model, cfg.attempts, sweep, notes)
