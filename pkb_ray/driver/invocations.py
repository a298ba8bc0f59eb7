"""`sweeps/<name>/config.yaml`: one YAML document per accepted invocation of the sweep.

Appended only after every check passed, so the file never claims settings that the
sweep's recorded cells were not made with, and a refused command leaves no trace. Each
document holds when, the command-line overrides, the sweep-wide settings the cells are
recorded under, and the whole composed config.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml


def command_overrides() -> list[str]:
    """The overrides of the running `sweep.py` command ([] outside Hydra)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return list(HydraConfig.get().overrides.task)


def append_invocation(path: Path, config: dict[str, Any], settings: dict[str, str],
                      overrides: list[str] | None = None) -> None:
    doc = {
        "invoked_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "overrides": list(overrides if overrides is not None else command_overrides()),
        "settings": dict(settings),
        "config": config,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("---\n" + yaml.safe_dump(doc, sort_keys=False))


def read_invocations(path: Path) -> list[dict[str, Any]]:
    """Every invocation document of a sweep (a config.yaml from before this format reads as
    one document without `invoked_at`)."""
    if not Path(path).exists():
        return []
    return [d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d]
