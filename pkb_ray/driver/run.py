"""`run_sweep`: one sweep invocation, composed in order (driver/sweep.py has the steps).

config -> models and problems -> journal (resume) -> Ray -> device -> trackers (reconcile)
-> evaluators and stages -> pipeline (record each cell as it lands) -> leaderboard.
"""

from __future__ import annotations

from omegaconf import DictConfig

from pkb_ray.driver.checks import (  # noqa: F401: the exit statuses callers test against
    EXIT_BAD_INPUT,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    resolve_sweep_models,
)
from pkb_ray.driver.sweep import Sweep


def run_sweep(dcfg: DictConfig) -> int:
    """Checks (nothing written before they pass), plan against the journal, run, report;
    returns the exit status."""
    sweep = Sweep(dcfg)
    refused = sweep.plan()
    if refused is not None:
        return refused
    with sweep.open_sinks():
        sweep.run()
        return sweep.finish()
