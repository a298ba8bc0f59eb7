"""Planning: the grid of cells, and which of them a resumed sweep still owes."""

from __future__ import annotations

from pkb_ray.records import CellKey


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
