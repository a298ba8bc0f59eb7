"""What a sweep asks of an experiment tracker. The journal (pkb_ray/store) is the source of
truth; a tracker mirrors it, and `reconcile` brings it back in line after a kill. MLflow
(mlflow_tracker.py) is one implementation; `trackers_for` (the package's __init__) picks
those the config enables. This module names no implementation: they import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from pkb_ray.records import CellResult


@dataclass
class SweepSummary:
    """What a tracker records for one invocation of a sweep, once its cells are in."""

    metrics: dict[str, float]
    """The leaderboard's figures (report/metrics.py:summary_metrics)."""
    files: list[Path]
    """The leaderboard's files (markdown, CSVs, heatmap)."""
    curves: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Agent and tools modes: model -> curve name -> one value per step (turn or tool call);
    report/turn_curves.py's CURVE_MODES names each curve's mode."""
    cells: dict[str, list] = field(default_factory=dict)
    """One row per cell, as columns (report/tables.py:cell_table)."""
    hardware: list[str] = field(default_factory=list)
    """Hardware fingerprints the cells were measured on."""


@runtime_checkable
class Tracker(Protocol):
    def reconcile(self, records: list[CellResult], fresh: bool = False) -> int:
        """Make the tracker hold exactly one entry per record; returns how many it (re)logged."""

    def log_cell(self, result: CellResult) -> None:
        """Mirror one recorded cell (may return before it is written: see flush)."""

    def log_sweep(self, summary: SweepSummary) -> None:
        """Record the invocation's summary."""

    def flush(self) -> None:
        """Wait until every logged cell is written."""

    def close(self, status: str = "FINISHED") -> list[str]:
        """End the invocation with `status` (FINISHED, KILLED, FAILED); returns the write
        errors met on the way (each already logged)."""

