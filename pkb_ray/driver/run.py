"""`run_sweep`: one sweep invocation, composed in order (driver/sweep.py has the steps).

config -> models and problems -> journal (resume) -> Ray -> device -> the plan (printed
and done, for `--dry-run`) -> trackers (reconcile) -> evaluators and stages -> pipeline
(record each cell as it lands) -> leaderboard.
"""

from __future__ import annotations

from omegaconf import DictConfig

from pkb_ray.driver.checks import (  # noqa: F401: the exit statuses callers test against
    EXIT_BAD_INPUT,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Refused,
    resolve_sweep_models,
)
from pkb_ray.driver.sweep import Sweep


def run_sweep(dcfg: DictConfig, dry_run: bool = False) -> int:
    """Checks (nothing written before they pass), plan against the journal, run, report;
    returns the exit status. `dry_run`: print the plan and its estimate (stdout) and stop
    there, having asked no cluster, GPU or API key (Sweep.plan)."""
    from pkb_ray.console import wrap

    sweep = Sweep(dcfg)
    try:
        plan = sweep.plan(dry_run=dry_run)
    except Refused as refused:
        return refused.status
    if dry_run:
        print("\n".join(wrap(line) for line in plan.describe() + sweep.estimate(plan)), flush=True)
        return EXIT_OK
    with sweep.open_sinks(plan):
        sweep.run(plan)
        return sweep.finish()
