"""The runs-table view a sweep opens on: what the MLflow UI shows first.

MLflow reads a view from two places. An experiment tag `mlflow.sharedViewState.<key>`,
opened by `?viewStateShareKey=<key>`, always comes with a "You're viewing a shared view"
banner over the table. The browser's own saved view of an experiment (localStorage, see
ui_app.open_page) shows none. The tracker writes the view into the tag; `pkb ui`'s open page
copies it from there into the browser's saved view, so the sweep opens with no banner, and
the tag stays the fallback for a server that does not serve that page.

The view lists cells flat (a filter on `pkb.kind = 'cell'`; with a filter and a sort order
MLflow does not fold children under their parent) and pins the newest invocation's parent
run (its leaderboard, heatmap and cells table) above them: MLflow fetches pinned runs by id,
whatever the filter, so the leaderboard is one click from the table.
"""

from __future__ import annotations

from typing import Any

KIND_TAG = "pkb.kind"
VIEW_KEY = "pkb"
"""`?viewStateShareKey=pkb` opens the view from the experiment tag below."""
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
INTERVAL_TAG = "speedup_interval"
"""A cell's 95% interval as one text column (`[1.02, 1.10]`): two metric columns of it took
200 px of the 1280 the comparison has."""

RUN_NAME_COLUMN = "attributes.`Run Name`"
"""MLflow 3.17's id for the run-name column (190 px unless the view says otherwise)."""
RUN_NAME_PX = 270
"""`reference/reduce_scatter/a1` whole, and names up to about 36 characters."""


def col(group: str, key: str) -> str:
    """MLflow's column id: `params.`model``, `metrics.`speedup``, `tags.`status``."""
    return f"{group}.`{key}`"


# What compares models at 1280 px: the run name (model/problem/attempt), then the verdict,
# the figure and its interval, why a cell failed and what it cost. Columns past those
# (model and problem to group or sort by, the raw timings, where it ran) lie to the right.
COLUMNS_PX: tuple[tuple[str, int], ...] = (
    (col("tags", "status"), 100),
    (col("metrics", "speedup"), 84),
    (col("tags", INTERVAL_TAG), 118),
    (col("tags", "failure_class"), 128),
    (col("metrics", "cost_usd"), 90),
    (col("metrics", "roofline_fraction"), 130),
    (col("params", "model"), 140),
    (col("params", "problem"), 200),
    (col("params", "category"), 120),
    (col("metrics", "candidate_ms"), 120),
    (col("metrics", "reference_ms"), 120),
    (col("metrics", "speedup_ci_low"), 130),
    (col("metrics", "speedup_ci_high"), 130),
    (col("params", "device"), 90),
    (col("params", "world_size"), 100),
    (col("params", "hardware_fingerprint"), 230),
)


def runs_view(pinned_run_id: str | None = None) -> dict[str, Any]:
    """The view (MLflow's view-state JSON): cells flat, sorted by problem, the comparison's
    columns first, `pinned_run_id` (the newest parent run) pinned on top."""
    columns = [c for c, _ in COLUMNS_PX]
    return {
        "searchFilter": f"tags.`{KIND_TAG}` = 'cell'",
        "orderByKey": col("params", "problem"),
        "orderByAsc": True,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "modelVersionFilter": "All Runs",
        "selectedColumns": columns,
        # As listed, not grouped by params / tags / metrics. MLflow applies a width only to
        # a column named here, the run name's included.
        "columnOrder": [RUN_NAME_COLUMN, *columns],
        "columnWidths": {RUN_NAME_COLUMN: RUN_NAME_PX, **dict(COLUMNS_PX)},
        "runsPinned": [pinned_run_id] if pinned_run_id else [],
        "runsExpanded": {},
        "runListHidden": False,
        "viewMaximized": False,
    }


def interval_text(low: float | None, high: float | None) -> str:
    """`[1.02, 1.1]` (3 significant digits), or "" when there is no interval."""
    if low is None or high is None:
        return ""
    return f"[{low:.3g}, {high:.3g}]"
