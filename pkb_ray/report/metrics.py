"""Sweep metrics: pass@k, fast_p@k, fast1@k and geometric-mean speedup.

pass@k uses the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k), per
(model, problem) over its n recorded attempts, averaged over problems. fast_p@k is the same
estimator where a success is "correct and speedup > p" (KernelBench's fast_p). Hand-written
because it is four lines on math.comb; no statistics library offers this estimator.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from pkb_ray.records import CellResult, CellStatus

FAST_P_THRESHOLDS = (0.0, 1.0, 1.5, 2.0)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c correct) is correct."""
    if n <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def is_fast(result: CellResult, p: float) -> bool:
    speedup = result.speedup
    return result.status == CellStatus.CORRECT and speedup is not None and speedup > p


def geometric_mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


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
    geomean_speedup: float | None
    cost_usd: float
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def fast1_at_k(self) -> float:
        return self.fast_p_at_k[1.0]

    def as_row(self) -> dict[str, object]:
        row: dict[str, object] = {
            "model": self.model,
            "mode": self.mode,
            "problems": self.problems,
            "cells": self.cells,
            "pass@1": self.pass_at_1,
            f"pass@{self.k}": self.pass_at_k,
            f"fast1@{self.k}": self.fast1_at_k,
        }
        for p in FAST_P_THRESHOLDS:
            row[f"fast_{p:g}@{self.k}"] = self.fast_p_at_k[p]
        row["geomean_speedup"] = self.geomean_speedup
        row["cost_usd"] = self.cost_usd
        row.update({f"n_{k}": v for k, v in sorted(self.counts.items())})
        return row


def group_cells(results: list[CellResult]) -> dict[tuple[str, str], dict[str, list[CellResult]]]:
    """(model, mode) -> problem -> attempts."""
    grouped: dict[tuple[str, str], dict[str, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        grouped[(r.key.model, r.key.mode)][r.key.problem].append(r)
    return grouped


def fast_p_at_k(per_problem: dict[str, list[CellResult]], p: float, k: int) -> float:
    if not per_problem:
        return 0.0
    return sum(
        pass_at_k(len(cells), sum(is_fast(c, p) for c in cells), k) for cells in per_problem.values()
    ) / len(per_problem)


def summarize(results: list[CellResult]) -> list[ModelSummary]:
    summaries = []
    for (model, mode), per_problem in sorted(group_cells(results).items()):
        k = max(len(cells) for cells in per_problem.values())
        cells = [c for cs in per_problem.values() for c in cs]
        counts: dict[str, int] = defaultdict(int)
        for c in cells:
            counts[c.status.value] += 1
        n_problems = len(per_problem)
        summaries.append(
            ModelSummary(
                model=model,
                mode=mode,
                k=k,
                problems=n_problems,
                cells=len(cells),
                pass_at_1=sum(
                    pass_at_k(len(cs), sum(c.status == CellStatus.CORRECT for c in cs), 1)
                    for cs in per_problem.values()
                ) / n_problems,
                pass_at_k=sum(
                    pass_at_k(len(cs), sum(c.status == CellStatus.CORRECT for c in cs), k)
                    for cs in per_problem.values()
                ) / n_problems,
                fast_p_at_k={p: fast_p_at_k(per_problem, p, k) for p in FAST_P_THRESHOLDS},
                geomean_speedup=geometric_mean(
                    [c.speedup for c in cells if c.status == CellStatus.CORRECT and c.speedup]
                ),
                cost_usd=sum(c.generation.cost_usd for c in cells),
                counts=dict(counts),
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
        out[f"{prefix}/fast1_at_k"] = s.fast1_at_k
        for p in FAST_P_THRESHOLDS:
            out[f"{prefix}/fast_{p:g}_at_k"] = s.fast_p_at_k[p]
        if s.geomean_speedup is not None:
            out[f"{prefix}/geomean_speedup"] = s.geomean_speedup
        out[f"{prefix}/cost_usd"] = s.cost_usd
    return out
