"""Planning: the grid of cells with the identity each will be recorded under, which of them
a resumed sweep still owes, what that should take, and the header that says so. The plan
is frozen: decided before anything is written, printed by `--dry-run`, run by the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Collection, Mapping

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.identity import cell_identity
from pkb_ray.modes import CellState, mode_of
from pkb_ray.driver.progress import CONTENTION, SECONDS_PER_CELL, _duration, estimate_s
from pkb_ray.records import CellKey, record_id_of

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


def first_prompts(problems: dict[str, Problem], context: EvalContext) -> dict[str, tuple[str, int]]:
    """Each problem's first-turn prompt for this evaluation, as (hash, about how many tokens):
    the same text the generation actors build, so the same hash their kernels_cache keys hold."""
    from pkb_ray.generation.client import estimate_prompt_tokens
    from pkb_ray.generation.prompt import build_prompt

    out = {}
    for pid, p in problems.items():
        prompt = build_prompt(p, None, context)
        out[pid] = (prompt.hash, estimate_prompt_tokens(prompt.messages))
    return out


MAX_LISTED_CELLS = 200
"""A dry run lists this many cells one by one; a 40-model sweep's 13,000 would bury the
counts and the estimate."""


@dataclass(frozen=True)
class PlannedCell:
    """One cell of a plan: what it is, what it is recorded under, and whether it is."""

    key: CellKey
    identity: Mapping[str, str]
    """Everything that changes its result (driver/identity.py), read-only."""
    record_id: str
    """The journal key it is recorded under (CellResult.record_id)."""
    done: bool
    """Recorded already under this identity: not run again."""


@dataclass(frozen=True)
class SweepPlan:
    """What one invocation will do, decided before anything is written: every cell with
    the identity it is recorded under, which of them are recorded, what will run, and about
    how long that takes. `Sweep.plan()` returns it, `--dry-run` prints it (`describe`), and
    the pipeline runs its pending cells (`states`)."""

    name: str
    """The sweep's name (its directory under sweep.root)."""
    journal: Path
    cells: tuple[PlannedCell, ...]
    problems_per_model: Mapping[str, int]
    attempts: int
    sweep_settings: Mapping[str, str]
    """The sweep-wide part of every cell's identity."""
    device: str
    """cpu | cuda, as the device decision resolved `eval.device`."""
    size: str
    world_size: int
    trials: int
    harness_version: str
    evaluators: int = 1
    """Node evaluators the estimate counts on."""
    calls_api: bool = False
    """Some model asks an API (the estimate leaves its replies out)."""
    notes: tuple[str, ...] = ()
    """Said before the header (e.g. how many problems have an expert solution)."""
    shared: bool = False
    """GPU evaluations run beside others on their node (GPU groups): each is slower."""
    prompt_tokens: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Problem -> about how many tokens its first prompt is (API models only)."""

    @property
    def pending(self) -> tuple[PlannedCell, ...]:
        """The cells this invocation runs, in the plan's order."""
        return tuple(c for c in self.cells if not c.done)

    def planned_ids(self) -> dict[str, str]:
        """cell id -> the record id this invocation records it under."""
        return {c.key.cell_id: c.record_id for c in self.cells}

    def states(self) -> list[CellState]:
        """A fresh pipeline state for each pending cell (what Sweep.run executes)."""
        return [CellState(c.key, identity=dict(c.identity)) for c in self.pending]

    def estimate_s(self) -> float:
        """Seconds the pending cells should take (driver/progress.py's measured rates;
        model replies not included)."""
        return estimate_s(self.device, len(self.pending), self.evaluators, shared=self.shared)

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

    def header(self) -> list[str]:
        """What a run says before its first cell: the grid, what is recorded and what runs
        where, and (when something runs) the estimate."""
        pending = len(self.pending)
        lines = [f"pkb: sweep {self.name!r}: {self.size_text()}; {len(self.cells) - pending} already recorded, "
                 f"{pending} to run on {self.device} (world size {self.world_size}, {self.size} sizes, "
                 f"{self.trials} trials, harness {self.harness_version}); journal {self.journal}"]
        if pending:
            per = "" if self.evaluators == 1 else f" / {self.evaluators} evaluators"
            slower = f" x {CONTENTION} beside other GPU groups" if self.shared and self.device == "cuda" else ""
            lines.append(f"pkb: estimate: about {_duration(self.estimate_s())} for {pending} cells "
                         f"(measured {SECONDS_PER_CELL.get(self.device, 0):g} s per cell on {self.device}{slower}{per}"
                         f"{'; model replies not included' if self.calls_api else ''})")
        return lines

    def describe(self, max_cells: int = MAX_LISTED_CELLS) -> list[str]:
        """The whole plan for a reader (`--dry-run`): the notes and the header, the settings
        every cell is recorded under, each model's count, then one line per cell (the first
        `max_cells`): done or to run, its record id (cell id @ digest of its identity) and what
        else it is recorded under."""
        lines = [f"pkb: {note}" for note in self.notes] + self.header()
        lines.append("every cell is recorded under:")
        lines += [f"  {k} = {v}" for k, v in sorted(self.sweep_settings.items())]
        lines.append("cells per model:")
        for model, n in self.problems_per_model.items():
            cells = [c for c in self.cells if c.key.model == model]
            todo = sum(1 for c in cells if not c.done)
            lines.append(f"  {model}: {len(cells)} cells ({n} problems x {self.attempts}), {todo} to run, "
                         f"{len(cells) - todo} recorded")
        shown = self.cells[:max_cells]
        more = f", the first {len(shown)} of {len(self.cells)}" if len(shown) < len(self.cells) else ""
        lines.append(f"cells (status, record id, its own settings{more}):")
        for c in shown:
            own = " ".join(f"{k}={v}" for k, v in sorted(c.identity.items()) if k not in self.sweep_settings)
            lines.append(f"  {'done  ' if c.done else 'to run'}  {c.record_id}  {own}".rstrip())
        if more:
            lines.append(f"  ... {len(self.cells) - len(shown)} more, each recorded under the settings above and "
                         "its own (problem_version, prompt_hash or candidate_sha, model sampling)")
        return lines


def build_plan(cfg: RootConfig, models: list[ModelConfig], problems: dict[str, Problem],
               sweep: dict[str, str], context: EvalContext, *, device: str, size: str,
               harness_version: str, done: Collection[str] = frozenset(), evaluators: int = 1,
               shared: bool = False) -> SweepPlan:
    """The plan of this invocation: the grid (attempt-major), each cell's identity, and
    `done`, the record ids the sweep's journal holds."""
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
    prompts = first_prompts(problems, context) if api else {}
    mode = mode_of(cfg.mode.name).identity_settings(cfg)
    by_name = {m.name: m for m in models}
    done = set(done)
    cells = []
    for key in kept:
        model, problem = by_name[key.model], problems[key.problem]
        identity = cell_identity(sweep, model, problem.spec.version, prompts.get(key.problem, ("", 0))[0] or None,
                                 sources[key.model].serve(problem), mode)
        record_id = record_id_of(key, identity)
        cells.append(PlannedCell(key, MappingProxyType(identity), record_id, record_id in done))
    per_model = {m.name: sum(1 for k in kept if k.model == m.name and k.attempt == 1) for m in models}
    return SweepPlan(name=cfg.sweep.name, journal=Path(cfg.sweep.root) / cfg.sweep.name / "journal.jsonl",
                     cells=tuple(cells), problems_per_model=MappingProxyType(per_model), attempts=cfg.attempts,
                     sweep_settings=MappingProxyType(dict(sweep)), device=device, size=size,
                     world_size=cfg.eval.world_size, trials=cfg.eval.trials, harness_version=harness_version,
                     evaluators=evaluators, calls_api=api, notes=tuple(notes), shared=shared,
                     prompt_tokens=MappingProxyType({pid: tokens for pid, (_, tokens) in prompts.items()}))
