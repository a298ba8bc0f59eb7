"""Harness findings: self-check figures that measure the harness's error, not a speedup.

A self-check times each problem's reference against itself, so its true speedup is 1.0. A
figure off 1.00 by more than SELF_CHECK_TOLERANCE, or whose 95% interval leaves out 1.0, says
the timing was wrong (a loaded machine, two halves timed unalike), not that anything was
faster: on a loaded 2-core CPU one read 5.00 [1.10, 10.02] and moved the self-check's
geomean from 1.003 to 1.054 and painted its heatmap cell dark green. Such a cell stays
correct (pass@k counts it) but is named as a finding and kept out of every speed figure.
"""

from __future__ import annotations

from pkb_ray.records import CellResult, CellStatus

SELF_CHECK_TOLERANCE = 0.03
"""How far from 1.00 a reference timed against itself may read: the goal the self-timing
runs measure against (95 of 99 references within 1.00 +- 0.03 on one H100)."""


def times_itself(model: str) -> bool:
    """Whether the model's candidates are the references (a self-check). A sweep records the
    model's config name; the builtin `reference` config's name is its provider's."""
    from pkb_ray.generation.sources import UnknownSourceError, source_for

    try:
        return source_for(model).times_itself
    except UnknownSourceError:
        return False


def harness_finding(result: CellResult) -> str | None:
    """Why a correct self-check cell's speedup is the harness's error, or None (not a
    self-check, not timed, or within its allowance)."""
    ev = result.evaluation
    s = result.speedup
    if result.status != CellStatus.CORRECT or s is None or ev is None or not times_itself(result.key.model):
        return None
    why = []
    low, high = ev.speedup_ci_low, ev.speedup_ci_high
    if low is not None and high is not None and not low <= 1.0 <= high:
        why.append("its interval leaves out 1.0")
    if abs(s - 1.0) > SELF_CHECK_TOLERANCE:
        why.append(f"it is off 1.00 by more than {SELF_CHECK_TOLERANCE:.2f}")
    return " and ".join(why) or None


def is_finding(result: CellResult) -> bool:
    return harness_finding(result) is not None


def finding_lines(results: list[CellResult]) -> list[str]:
    """One line per finding: the cell, its figure and interval, and why it is one."""
    lines = []
    for r in sorted(results, key=lambda r: (r.key.model, r.key.problem, r.key.attempt)):
        why = harness_finding(r)
        if why is None:
            continue
        ev = r.evaluation
        interval = (f" [{ev.speedup_ci_low:.2f}, {ev.speedup_ci_high:.2f}]"
                    if ev is not None and ev.speedup_ci_low is not None and ev.speedup_ci_high is not None else "")
        lines.append(f"{r.key.model}/{r.key.problem} a{r.key.attempt}: {r.speedup:.2f}x{interval}: {why}")
    return lines


FINDINGS_LEGEND = (
    "A self-check times each reference against itself: its true speedup is 1.0. These read "
    f"otherwise (off 1.00 +- {SELF_CHECK_TOLERANCE:.2f}, or an interval without 1.0): the "
    "harness's timing error on this machine, not a speedup. They count as correct, and are "
    "kept out of fast_p, the geomean and the heatmap's colours.")
