"""Experiment trackers: mirrors of the sweep's journal (pkb_ray/store), behind one protocol.

Owns the Tracker protocol (tracker.py), its MLflow implementation (mlflow_tracker.py), the
runs view it opens on (runs_view.py) and `pkb ui` (ui.py, its server app ui_app.py, and
rest.py for what it asks a server). May import records, config, modes (run names) and report
(the leaderboard's curves); the driver imports it. `trackers_for` lives here, above the protocol and every
implementation, so that the protocol names none of them.
"""

from __future__ import annotations

from pathlib import Path

from pkb_ray.config.schema import RootConfig
from pkb_ray.tracking.owner import SweepConflict, sweep_id
from pkb_ray.tracking.tracker import SweepSummary, Tracker

__all__ = ["SweepConflict", "SweepSummary", "Tracker", "trackers_for"]


def trackers_for(cfg: RootConfig, run_params: dict[str, str]) -> list[Tracker]:
    """The trackers this config enables, opened: MLflow when tracking.enabled. Raises
    SweepConflict when the store's experiment of this name mirrors another sweep directory."""
    if not cfg.tracking.enabled:
        return []
    from pkb_ray.tracking.mlflow_tracker import MlflowTracker  # mlflow loads only when enabled

    uri = cfg.tracking.uri
    # A tracking server keeps the artifacts itself (its artifact store, shared by the team);
    # a store this process writes directly (SQLite, PostgreSQL) keeps them in mlartifacts/.
    served = uri.startswith(("http://", "https://", "databricks"))
    owner = sweep_id(Path(cfg.sweep.root) / cfg.sweep.name)
    return [MlflowTracker(uri, cfg.sweep.name, None if served else Path("mlartifacts"), run_params, owner)]
