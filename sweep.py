"""`python sweep.py [overrides]`: run a models x problems x attempts sweep.

Examples:
    python sweep.py                                   # shipped expert solutions, every problem
    python sweep.py model=opus47 attempts=3
    python sweep.py models=all attempts=3 cluster.address=auto
    python sweep.py model=reference problems=smoke eval.device=cpu attempts=2
    python sweep.py --cfg job                         # print the composed config
    python sweep.py --dry-run model=opus47 attempts=3 # print the plan: cells, done, to run, estimate
"""

import sys

import hydra
from omegaconf import DictConfig

from pkb_ray.config import register_configs

register_configs()


DRY_RUN = "--dry-run"
"""Ours, not Hydra's: taken off the command line before Hydra reads it."""
dry_run = False


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from pkb_ray.driver.run import run_sweep  # after Hydra parsed: --help/--cfg stay fast

    # Hydra drops a task's return value: exit here so the status reaches the shell.
    sys.exit(run_sweep(cfg, dry_run=dry_run))


if __name__ == "__main__":
    from pkb_ray.config.overrides import check_overrides

    dry_run = DRY_RUN in sys.argv
    sys.argv = [a for a in sys.argv if a != DRY_RUN]

    # Before Hydra: its hint for an unknown key is `+key=...`, which would compose silently.
    unknown = check_overrides(sys.argv[1:])
    if unknown:
        from pkb_ray.console import wrap

        print(wrap(f"pkb: {unknown}"), file=sys.stderr)
        sys.exit(2)
    main()
