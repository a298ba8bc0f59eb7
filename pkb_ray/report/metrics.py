"""Sweep metrics: pass@k, fast_p@k (point estimate and significant), geometric-mean speedup.

pass@k uses the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k), per
(model, problem) over its n recorded attempts, averaged over problems. fast_p@k is the same
estimator where a success is "correct and speedup > p" (KernelBench's fast_p, PKB's point
estimate). sig_fast_p@k counts a success only when the speedup's 95% interval lies above p
(`speedup_ci_low > p`): a 1.02x whose interval spans 0.95..1.09 is not "faster". A cell
without an interval never counts as significant. Hand-written because it is four lines on
math.comb; no statistics library offers this estimator.

Kept apart from the speed figures: `implausible` cells (correct outputs at a time physics or
the judge's clock rules out: never correct, never fast, counted in their own column) and
cells flagged `launch_bound` (their time is launch overhead, not the kernel's work: correct
counts for pass@k, but not for fast_p or the geometric mean; counted in their own column).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from pkb_ray.records import CellResult, CellStatus
from pkb_ray.report.findings import is_finding, times_itself

FAST_P_THRESHOLDS = (1.0, 1.5, 2.0)
"""fast_0 would equal pass@k; thresholds below 1 say nothing about speed."""

LAUNCH_BOUND = "launch_bound"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c correct) is correct."""
    if n <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def is_launch_bound(result: CellResult) -> bool:
    return bool(result.evaluation and LAUNCH_BOUND in (result.evaluation.flags or []))


def timed_speedup(result: CellResult) -> float | None:
    """The speedup that counts for speed figures: correct, not launch-bound, finite, and not
    a harness finding (a self-check figure off 1.0: report/findings.py)."""
    s = result.speedup
    if result.status != CellStatus.CORRECT or is_launch_bound(result) or s is None or is_finding(result):
        return None
    return s if math.isfinite(s) and s > 0 else None


def is_fast(result: CellResult, p: float) -> bool:
    s = timed_speedup(result)
    return s is not None and s > p


def is_fast_significant(result: CellResult, p: float) -> bool:
    low = result.evaluation.speedup_ci_low if result.evaluation else None
    return timed_speedup(result) is not None and low is not None and low > p


def geometric_mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not kept:
        return None
    return math.exp(sum(math.log(v) for v in kept) / len(kept))


@dataclass
class ModelSummary:
    model: str
    mode: str
    k: int
    problems: int
    cells: int
    pass_at_1: float
    pass_at_k: float
    fast_p_at_k: dict[float, float]
    """PKB's point estimate: correct and speedup > p."""
    sig_fast_p_at_k: dict[float, float]
    """Correct and the speedup's 95% interval above p."""
    geomean_speedup: float | None
    """Over correct, not launch-bound cells."""
    cost_usd: float
    counts: dict[str, int] = field(default_factory=dict)
    """Cells per status (correct, incorrect, failed, implausible)."""
    launch_bound: int = 0
    """Correct cells flagged launch_bound (not in fast_p or the geometric mean)."""
    fast1_at_1: float = 0.0
    """fast_1 with one attempt drawn (the modes' side-by-side table: pass@1 beside it)."""
    sig_fast1_at_1: float = 0.0
    """sig_fast_1 with one attempt drawn."""
    self_check: bool = False
    """The model's candidates are the references (its figures measure the harness)."""
    harness_findings: int = 0
    """Self-check cells whose speedup is off 1.0 (report/findings.py): correct, but in no
    speed figure."""

    @property
    def fast1_at_k(self) -> float:
        return self.fast_p_at_k[1.0]

    def as_row(self) -> dict[str, object]:
        """One row of the totals table; `@k` columns hold k attempts (the `k` column)."""
        row: dict[str, object] = {
            "model": self.model,
            "mode": self.mode,
            "k": self.k,
            "problems": self.problems,
            "cells": self.cells,
            "correct": self.counts.get("correct", 0),
            "incorrect": self.counts.get("incorrect", 0),
            "failed": self.counts.get("failed", 0),
            "implausible": self.counts.get("implausible", 0),
            "launch_bound": self.launch_bound,
            "pass@1": self.pass_at_1,
        }
        if self.self_check:
            row["harness_findings"] = self.harness_findings
        if self.k > 1:
            row["pass@k"] = self.pass_at_k
        for p in FAST_P_THRESHOLDS:
            row[f"fast_{p:g}@k"] = self.fast_p_at_k[p]
            row[f"sig_fast_{p:g}@k"] = self.sig_fast_p_at_k[p]
        row["geomean_speedup"] = self.geomean_speedup
        row["cost_usd"] = self.cost_usd
        return row


def group_cells(results: list[CellResult]) -> dict[tuple[str, str], dict[str, list[CellResult]]]:
    """(model, mode) -> problem -> attempts."""
    grouped: dict[tuple[str, str], dict[str, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        grouped[(r.key.model, r.key.mode)][r.key.problem].append(r)
    return grouped


def _estimate(per_problem: dict[str, list[CellResult]], success, k: int) -> float:
    if not per_problem:
        return 0.0
    return sum(pass_at_k(len(cells), sum(map(success, cells)), k)
               for cells in per_problem.values()) / len(per_problem)


def fast_p_at_k(per_problem: dict[str, list[CellResult]], p: float, k: int,
                significant: bool = False) -> float:
    test = is_fast_significant if significant else is_fast
    return _estimate(per_problem, lambda c: test(c, p), k)


def summarize(results: list[CellResult]) -> list[ModelSummary]:
    summaries = []
    for (model, mode), per_problem in sorted(group_cells(results).items()):
        k = max(len(cells) for cells in per_problem.values())
        cells = [c for cs in per_problem.values() for c in cs]
        counts: dict[str, int] = defaultdict(int)
        for c in cells:
            counts[c.status.value] += 1
        correct = lambda c: c.status == CellStatus.CORRECT  # noqa: E731
        summaries.append(
            ModelSummary(
                model=model,
                mode=mode,
                k=k,
                problems=len(per_problem),
                cells=len(cells),
                pass_at_1=_estimate(per_problem, correct, 1),
                pass_at_k=_estimate(per_problem, correct, k),
                fast_p_at_k={p: fast_p_at_k(per_problem, p, k) for p in FAST_P_THRESHOLDS},
                sig_fast_p_at_k={p: fast_p_at_k(per_problem, p, k, True) for p in FAST_P_THRESHOLDS},
                geomean_speedup=geometric_mean([timed_speedup(c) for c in cells]),
                cost_usd=sum(c.generation.cost_usd for c in cells),
                counts=dict(counts),
                launch_bound=sum(1 for c in cells if correct(c) and is_launch_bound(c)),
                fast1_at_1=fast_p_at_k(per_problem, 1.0, 1),
                sig_fast1_at_1=fast_p_at_k(per_problem, 1.0, 1, True),
                self_check=times_itself(model),
                harness_findings=sum(1 for c in cells if is_finding(c)),
            )
        )
    return summaries


def summary_metrics(summaries: list[ModelSummary]) -> dict[str, float]:
    """Flat parent-run metrics, keyed `<model>/<mode>/<metric>` (MLflow forbids '@')."""
    out: dict[str, float] = {}
    for s in summaries:
        prefix = f"{s.model}/{s.mode}"
        out[f"{prefix}/pass_at_1"] = s.pass_at_1
        out[f"{prefix}/pass_at_k"] = s.pass_at_k
        for p in FAST_P_THRESHOLDS:
            out[f"{prefix}/fast_{p:g}_at_k"] = s.fast_p_at_k[p]
            out[f"{prefix}/sig_fast_{p:g}_at_k"] = s.sig_fast_p_at_k[p]
        if s.geomean_speedup is not None:
            out[f"{prefix}/geomean_speedup"] = s.geomean_speedup
        out[f"{prefix}/cost_usd"] = s.cost_usd
        out[f"{prefix}/implausible"] = float(s.counts.get("implausible", 0))
        out[f"{prefix}/launch_bound"] = float(s.launch_bound)
        if s.self_check:
            out[f"{prefix}/harness_findings"] = float(s.harness_findings)
    return out
