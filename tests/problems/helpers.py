"""Problem directories for tests, copied from a real builtin problem."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from pkb_ray.problems import builtin_dir

TEMPLATE = builtin_dir() / "allreduce"


def copy_problem(root: Path, pid: str) -> Path:
    """`root/pid`: the allreduce problem (without its expert) under a new id."""
    d = root / pid
    shutil.copytree(TEMPLATE, d, ignore=shutil.ignore_patterns("expert.py", "__pycache__"))
    if pid != TEMPLATE.name:
        meta = yaml.safe_load((d / "problem.yaml").read_text())
        meta["id"] = pid
        (d / "problem.yaml").write_text(yaml.safe_dump(meta))
    return d
