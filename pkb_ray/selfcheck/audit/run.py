"""`audit_problems`: every problem of a source at one world size, in one group of rank
processes (ranks.py; a new group only after a problem that broke one), judged as each
problem finishes (verdict.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pkb_ray.selfcheck.audit.records import AuditPlan, ProblemAudit
from pkb_ray.selfcheck.audit.verdict import Reasons


@dataclass
class AuditRun:
    audits: list[ProblemAudit]
    machine: str
    seconds: float
    notes: list[str] = field(default_factory=list)


def audit_problems(world_size: int, plan: AuditPlan, source: str = "builtin", ids: list[str] | None = None, *,
                   problem_timeout_s: float = 180.0, grace_s: float = 15.0, budget_s: float = 0.0,
                   reasons: Reasons | None = None, cache_dir: str = "~/.cache/pkb_ray",
                   on_start: Callable[[str], None] | None = None,
                   on_audit: Callable[[ProblemAudit], None] | None = None) -> AuditRun:
    """Audit every problem of `source` (or `ids`) at `world_size`; `budget_s` > 0 stops
    starting problems after that long (those left are `skip`: not reached). `on_start` hears
    the machine's description before the ranks start, `on_audit` each problem's verdict."""
    from pkb_ray.problems.loader import load_problems
    from pkb_ray.selfcheck.audit.rank_task import AuditTask
    from pkb_ray.selfcheck.audit.verdict import judge
    from pkb_ray.selfcheck.ranks import run_in_ranks

    t0 = time.monotonic()
    if plan.device == "cuda":
        from pkb_ray.engine.hardware import gpu_count

        have = gpu_count()
        if have < world_size:
            raise ValueError(f"--device cuda --world-size {world_size} needs {world_size} GPUs; nvidia-smi lists {have}")
    loaded = load_problems(source, ids)
    audits: dict[str, ProblemAudit] = {}

    def fail(pid: str, message: str, status: str = "FAIL") -> ProblemAudit:
        return ProblemAudit(pid, world_size, plan.device, plan.size, status, message,
                            correct="FAIL" if status == "FAIL" else "")

    for err in loaded.errors:
        audits[err.problem] = fail(err.problem, f"load error: {err}")
    runnable = []
    for pid, p in loaded.problems.items():
        refusal = p.spec.world_size_refusal(world_size, tests=True)
        if refusal or plan.size not in p.spec.sizes:
            audits[pid] = fail(pid, refusal or f"no size {plan.size!r}", "skip")
        else:
            runnable.append(pid)
    profile, machine, notes = None, "cpu (gloo ranks)", []
    if plan.device == "cuda" and runnable:
        from pkb_ray.selfcheck.audit.hardware_profile import describe, node_profile

        profile, how = node_profile(cache_dir)
        machine = describe(profile)
        notes.append(f"hardware profile: {how}")
    if on_start is not None:
        on_start(machine)

    def heard(run) -> None:
        try:
            audit = judge(loaded.problems[run.problem], run, world_size, plan, profile, reasons)
        except Exception as exc:  # noqa: BLE001 - one odd report must not end the suite's audit
            from pkb_ray.selfcheck.launcher import describe

            audit = fail(run.problem, f"the audit could not judge the ranks' reports: {describe(exc)}")
        audits[run.problem] = audit
        if on_audit is not None:
            on_audit(audit)

    stop_at = t0 + budget_s if budget_s > 0 else None
    run_in_ranks(world_size, source, runnable, AuditTask(plan), problem_timeout_s, grace_s, device=plan.device,
                 on_result=heard, stop_at=stop_at)
    for pid in runnable:
        if pid not in audits:
            audits[pid] = fail(pid, f"not reached in the budget of {budget_s:.0f} s", "skip")
            if on_audit is not None:
                on_audit(audits[pid])
    order = [e.problem for e in loaded.errors] + list(loaded.problems)
    return AuditRun([audits[pid] for pid in order], machine, time.monotonic() - t0, notes)


SHIPPED_REASONS = "audit_reasons.yaml"
"""The suite's own written reasons, in the builtin problems/ directory: read by default for
`--source builtin`, so a user's audit of the shipped suite shows as open only what is new."""


def shipped_reasons_path() -> Path:
    from pkb_ray.problems.loader import builtin_dir

    return builtin_dir() / SHIPPED_REASONS


def load_reasons(path: str | Path | None, world_size: int | None = None) -> Reasons:
    """{problem: {finding kind or '*': reason}} from a YAML file (None: no reasons), the ones
    that apply at `world_size` (None: only those written for every world size).

    A kind's reason is a string, which applies at every world size, or `{at: [sizes], reason:
    text}` or a list of those: a reason grounded in one world size's figures applies only
    where it was measured, since at another the same finding may have another cause. A kind
    that is not a finding kind, an empty reason, a world size given twice for one kind or an
    unknown key is an error: each would leave a finding open (or accepted) unnoticed. Every
    entry is checked whatever `world_size` is asked for."""
    from pkb_ray.selfcheck.audit.verdict import FINDING_KINDS

    if not path:
        return {}
    import yaml

    with open(path) as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f"{path}: expected a mapping problem -> {{finding kind: reason}}")
    out: Reasons = {}
    for problem, kinds in data.items():
        mine: dict[str, str] = {}
        for kind, entry in kinds.items():
            where = f"{path}: {problem}: {kind}"
            if kind != "*" and kind not in FINDING_KINDS:
                raise ValueError(f"{path}: {problem}: {kind!r} is not a finding kind (one of "
                                 f"{', '.join(FINDING_KINDS)}, or '*')")
            for sizes, text in _scoped_reasons(where, entry):
                if sizes is None or world_size in sizes:
                    mine[str(kind)] = text
        if mine:
            out[str(problem)] = mine
    return out


def _scoped_reasons(where: str, entry) -> list[tuple[frozenset[int] | None, str]]:
    """One kind's entry as (world sizes or None for all, reason) pairs, validated."""
    if isinstance(entry, dict):
        entry = [entry]
    if not isinstance(entry, list):
        entry = [{"reason": entry}]
    pairs: list[tuple[frozenset[int] | None, str]] = []
    seen: set[int] = set()
    for item in entry:
        if not isinstance(item, dict) or set(item) - {"at", "reason"}:
            raise ValueError(f"{where}: expected a reason, or {{at: [world sizes], reason: text}} "
                             f"(or a list of them), got {item!r}")
        text = " ".join(str(item.get("reason") or "").split())
        if not text:
            raise ValueError(f"{where}: an empty reason accepts nothing")
        if "at" not in item:
            if len(entry) > 1:
                raise ValueError(f"{where}: in a list each reason needs `at` (its world sizes)")
            pairs.append((None, text))
            continue
        sizes = item["at"]
        if not isinstance(sizes, list) or not sizes or not all(isinstance(w, int) and not isinstance(w, bool)
                                                               and w >= 1 for w in sizes):
            raise ValueError(f"{where}: `at` must be a non-empty list of world sizes, got {sizes!r}")
        if seen & set(sizes):
            raise ValueError(f"{where}: world size {sorted(seen & set(sizes))} has two reasons")
        seen |= set(sizes)
        pairs.append((frozenset(sizes), text))
    return pairs


def merge_reasons(base: Reasons, extra: Reasons) -> Reasons:
    """`extra` over `base`, kind by kind (a user's file adds to the shipped one or replaces
    one of its reasons; it never drops the others of that problem)."""
    out = {p: dict(k) for p, k in base.items()}
    for problem, kinds in extra.items():
        out.setdefault(problem, {}).update(kinds)
    return out
