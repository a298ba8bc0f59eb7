"""`pkb sweep [KEY=VALUE ...]`: the same sweep as `python sweep.py KEY=VALUE ...`, from the
installed `pkb` command (the overrides are Hydra's; `python sweep.py --cfg job` prints the
composed config)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a models x problems x attempts sweep (as python sweep.py)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="config overrides, e.g. model=reference problems=smoke eval.device=cpu")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (every cell, its record id, done or to run, the estimate) and stop")
    p.set_defaults(handler=_sweep)


def _sweep(args: argparse.Namespace) -> int:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from pkb_ray.config import compose_config
    from pkb_ray.config.overrides import check_overrides
    from pkb_ray.driver.checks import EXIT_BAD_INPUT, say

    # Before Hydra, as sweep.py does: Hydra's hint for an unknown key (`+key=...`) composes.
    unknown = check_overrides(args.overrides)
    if unknown:
        say(f"pkb: {unknown}")
        return EXIT_BAD_INPUT
    try:
        cfg = compose_config(args.overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        cause = f": {str(exc.__cause__).splitlines()[0]}" if exc.__cause__ else ""
        say(f"pkb: {exc}{cause}")
        return EXIT_BAD_INPUT
    from pkb_ray.driver.run import run_sweep

    return run_sweep(cfg, dry_run=args.dry_run)
