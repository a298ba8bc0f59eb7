"""Several sweeps' cells in one leaderboard (`pkb report A B C`): typically the same models
swept zero-shot, with the feedback agent and with the tool agent, read side by side.

Their cells are combined only when everything that changes a result, other than the mode,
is the same: each cell's identity (written by pkb_ray/driver/identity.py; its sweep-wide
keys are named in pkb_ray/records.py), compared by scope:
- sweep-wide keys (`eval.*`: device, world size, size, trials, ...; the problems source;
  the harness version) over every cell of every sweep;
- `problem_version` per problem; `model.*` (model id, endpoint, sampling) per model;
  `candidate_sha` (what a pseudo-model serves) per model and problem;
- any other key (a mode's own settings, e.g. agent mode's `mode.turns`) among cells of the
  same mode and problem: another mode has other settings by design.
`prompt_hash` is not compared: each mode prompts in its own way, and what the prompt is
made of (the problem's version, the harness) is compared above. The hardware is: each
sweep's GPU kinds (the evaluated cells' fingerprints without their hash, e.g.
`NVIDIA_H200x2`) must be the same, or the mode's gain would mix in the hardware's.
Otherwise the refusal names each differing key with every sweep's value, and nothing is
written: a leaderboard would show cells side by side under settings some were not made with.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from pkb_ray.records import CellResult, identity_value, is_sweep_key

NOT_COMPARED = frozenset({"prompt_hash"})
UNSET = "(unset)"
SHOWN_PER_KEY = 3
"""Scopes (problems, models) named per differing key before `and N more`."""


class SettingsDiffer(ValueError):
    """The sweeps were made with other settings; the message names each differing key and
    every sweep's value of it."""


def _scope(key: str, cell: CellResult) -> tuple[str, ...] | None:
    """The cells among which `key` must agree, as a label tuple; None: never compared."""
    if key in NOT_COMPARED:
        return None
    if is_sweep_key(key):
        return ()
    if key == "problem_version":
        return (f"problem {cell.key.problem}",)
    if key.startswith("model."):
        return (f"model {cell.key.model}",)
    if key == "candidate_sha":
        return (f"model {cell.key.model}", f"problem {cell.key.problem}")
    return (f"mode {cell.key.mode}", f"problem {cell.key.problem}")


def _values(counts: Counter) -> str:
    if len(counts) == 1:
        return str(next(iter(counts)))
    return " / ".join(f"{v} ({n} cells)" for v, n in counts.most_common())


def settings_differences(sweeps: dict[str, list[CellResult]]) -> list[str]:
    """One line per identity key whose value differs between the sweeps, e.g.
    `eval.world_size: zs 2; tools 4`, or for a scoped key
    `problem_version (problem allreduce): zs 1a..; tools 9c..`."""
    lines = []
    for name, records in sweeps.items():
        legacy = sum(1 for r in records if not r.identity)
        if legacy:
            lines.append(f"sweep {name}: {legacy} cells were recorded before cells kept their "
                         "settings (identity); what they were made with is unknown")
    kinds = {name: hardware_kinds(records) for name, records in sweeps.items()}
    if len({k for k in kinds.values() if k}) > 1:
        lines.append("hardware: " + "; ".join(f"{name} {' + '.join(sorted(k))}" for name, k in kinds.items() if k))
    sweep_keys = {k for records in sweeps.values() for r in records for k in r.identity
                  if is_sweep_key(k)}
    # key -> scope -> sweep -> values seen
    seen: dict[str, dict[tuple[str, ...], dict[str, Counter]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(Counter)))
    for name, records in sweeps.items():
        for r in records:
            if not r.identity:
                continue
            # A sweep key a cell lacks (an older harness) differs from any value, unless
            # what such cells were made with is known (records.MADE_BEFORE_THE_KEY).
            for key in sweep_keys - r.identity.keys():
                seen[key][()][name][identity_value(r.identity, key) or UNSET] += 1
            for key, value in r.identity.items():
                scope = _scope(key, r)
                if scope is not None:
                    seen[key][scope][name][value] += 1
    for key in sorted(seen):
        differing = [(scope, per_sweep) for scope, per_sweep in sorted(seen[key].items())
                     if len(per_sweep) > 1 and len({v for c in per_sweep.values() for v in c}) > 1]
        for scope, per_sweep in differing[:SHOWN_PER_KEY]:
            where = f" ({', '.join(scope)})" if scope else ""
            lines.append(f"{key}{where}: " + "; ".join(
                f"{name} {_values(per_sweep[name])}" for name in sweeps if name in per_sweep))
        if len(differing) > SHOWN_PER_KEY:
            lines.append(f"{key}: and {len(differing) - SHOWN_PER_KEY} more "
                         f"{differing[0][0][-1].split()[0]}s like these")
    return lines


def hardware_kinds(records: list[CellResult]) -> frozenset[str]:
    """The GPU (or CPU) kinds a sweep's cells were evaluated on: fingerprints without their
    hash (`NVIDIA_H200x2-3f9a...` -> `NVIDIA_H200x2`); cells never evaluated have none."""
    return frozenset(r.hardware_fingerprint.rsplit("-", 1)[0] for r in records if r.hardware_fingerprint)


def shared_cells(sweeps: dict[str, list[CellResult]]) -> list[str]:
    """Cells (model, problem, attempt, mode) recorded by more than one of the sweeps: one
    line each (a combined leaderboard would have to drop one of them)."""
    where: dict[str, list[str]] = defaultdict(list)
    for name, records in sweeps.items():
        for r in records:
            where[r.key.cell_id].append(name)
    return [f"cell {cell} is in sweeps {', '.join(names)}"
            for cell, names in sorted(where.items()) if len(names) > 1]


def combine_sweeps(sweeps: dict[str, list[CellResult]]) -> list[CellResult]:
    """Every sweep's (current) records as one list. Raises SettingsDiffer naming each key
    whose value differs between the sweeps, or each cell two of them recorded."""
    names = ", ".join(sweeps)
    lines = settings_differences(sweeps)
    if lines:
        raise SettingsDiffer(
            f"sweeps {names} were made with other settings than one another (beside the "
            f"mode):\n  " + "\n  ".join(lines) + "\nNothing was written: a combined "
            "leaderboard would show their cells side by side under settings some were not "
            "made with. Run the sweeps again under one setting (the differing keys above), "
            "or report them one by one.")
    shared = shared_cells(sweeps)
    if shared:
        more = f"\n  and {len(shared) - 10} more" if len(shared) > 10 else ""
        raise SettingsDiffer(
            f"sweeps {names} recorded the same cells:\n  " + "\n  ".join(shared[:10]) + more
            + "\nNothing was written: a combined leaderboard shows one record per cell. "
            "Report these sweeps one by one, or combine sweeps of other models or modes.")
    return [r for records in sweeps.values() for r in records]


def sweep_modes(records: list[CellResult]) -> str:
    """The modes a sweep's cells were made in, e.g. `tools` (`zeroshot+agent` if mixed)."""
    modes = sorted({r.key.mode for r in records})
    return "+".join(modes) or "no cells"
