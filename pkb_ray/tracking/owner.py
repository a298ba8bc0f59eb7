"""Which sweep directory an MLflow experiment mirrors.

An experiment is named after its sweep, and the tracker makes it hold exactly the cells of
its journal (soft-deleting the rest). On a store a team shares, two people who run a sweep
of one name (the default `pkb`, say) from two directories would delete each other's runs on
every start. So each sweep directory carries a random id (`sweep_id`, made on its first
tracked run, moved with the directory), the experiment is tagged with it, and a sweep whose
id differs is refused before it writes anything into that experiment.
"""

from __future__ import annotations

import uuid
from pathlib import Path

OWNER_TAG = "pkb.sweep_id"
ID_FILE = "sweep_id"


class SweepConflict(ValueError):
    """The experiment of this sweep's name mirrors another sweep directory."""


def sweep_id(sweep_dir: Path) -> str:
    """The directory's id, made on first use."""
    path = Path(sweep_dir) / ID_FILE
    if path.exists():
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    path.parent.mkdir(parents=True, exist_ok=True)
    made = uuid.uuid4().hex
    path.write_text(made + "\n", encoding="utf-8")
    return made


def conflict_message(experiment: str, uri: str, held: str, ours: str) -> str:
    return (f"MLflow experiment {experiment!r} at {uri} mirrors another sweep directory (sweep_id "
            f"{held[:8]}; this one's is {ours[:8]}):\n  two sweeps of one name would delete each other's "
            "runs. Pick another sweep.name, or run from\n  the directory that holds that sweep.")
