"""`pkb`: the utilities around a sweep. Each stage owns its subcommands in its own `cli.py`.

    pkb sweep [--dry-run] [KEY=VALUE ...]   (as python sweep.py KEY=VALUE ...)
    pkb problems list [--json] | pkb problems check --world-size N [--device cpu|cuda] [--ids ...]
    pkb eval PROBLEM CANDIDATE.py [--world-size N] [--device cpu|cuda] [--json]
    pkb models list
    pkb prompt PROBLEM
    pkb report SWEEP_NAME [SWEEP_NAME ...]   (several: one leaderboard, modes side by side)
    pkb ui [--uri sqlite:///mlflow.db] [--port 5000]
    pkb agent run PROBLEM [sweep overrides] [agent.KEY=VALUE ...]
    pkb nodes list|close [--address auto]   (the shared node actors: cluster.share_nodes)
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (subcommand, module exposing `register(subparsers)`); imported lazily so that
# `pkb problems list` does not pay for importing litellm or Ray.
_COMMANDS = {
    "sweep": "pkb_ray.driver.cli",
    "problems": "pkb_ray.selfcheck.cli",  # list and coverage: problems/cli.py
    "eval": "pkb_ray.engine.cli",
    "models": "pkb_ray.generation.cli",
    "prompt": "pkb_ray.generation.cli",
    "report": "pkb_ray.report.cli",
    "ui": "pkb_ray.tracking.ui",
    "agent": "pkb_ray.agent.cli",
    "nodes": "pkb_ray.engine.node.shared_cli",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="pkb", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = argv[0] if argv and argv[0] in _COMMANDS else None
    modules = {_COMMANDS[wanted]} if wanted else set(_COMMANDS.values())
    for name in sorted(modules):
        importlib.import_module(name).register(sub)
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
