"""A sweep recorded before a sweep-wide key existed resumes under what its cells were made
with, and is refused under anything else (records.MADE_BEFORE_THE_KEY)."""

from __future__ import annotations

from pkb_ray.driver.identity import settings_changes
from pkb_ray.report.combine import settings_differences
from tests.helpers import make_result

BEFORE_GROUPS = {"eval.device": "cuda", "eval.world_size": "2", "harness_version": "0.4.0"}


def _recorded(identity: dict[str, str], n: int = 3):
    records = [make_result(problem=f"p{i}") for i in range(n)]
    for r in records:
        r.identity = dict(identity)
    return records


def test_cells_made_before_groups_were_made_exclusive():
    old = _recorded(BEFORE_GROUPS)
    assert settings_changes(old, {**BEFORE_GROUPS, "eval.exclusive": "true"}) == []
    assert settings_changes(old, {**BEFORE_GROUPS, "eval.exclusive": "false"}) == [
        "eval.exclusive: recorded true (3 cells), now false"]


def test_a_report_compares_them_as_exclusive_too():
    old = _recorded(BEFORE_GROUPS)
    grouped = _recorded({**BEFORE_GROUPS, "eval.exclusive": "false"})
    exclusive = _recorded({**BEFORE_GROUPS, "eval.exclusive": "true"})
    assert settings_differences({"old": old, "new": exclusive}) == []
    assert "eval.exclusive: old true; new false" in settings_differences({"old": old, "new": grouped})
