"""Whether a sweep has nothing left to run, answered before Ray starts.

Each invocation keeps its plan in `sweeps/<name>/plan.json`: a digest of what decides the
plan (the composed config, the harness version, the problem source's files) and the record
ids it planned. A later invocation with the same digest whose record ids are all in the
journal has nothing to run: it says so and exits in about a second, where starting Ray and
the evaluators to find that out takes 24 s on a 2-core machine.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from pkb_ray.records import RecordError
from pkb_ray.store import read_journal

PLAN_FILE = "plan.json"
NAMES_DIR = ".names"
"""Under sweep.root: `<plan digest>` -> the name of the sweep a default-named command made,
so the same command finds its sweep before Ray resolves the device its name carries."""
NOT_PLANNED = ("fresh", "progress")
"""sweep.* keys that change how a run starts or shows, not what it plans."""


def problem_files_digest(source: str) -> str:
    """Every file of the problem source, by content: an edited reference changes the
    problem's version, part of every cell's identity, so the sweep must plan again. Reading
    the 500-odd small builtin files takes milliseconds; loading the problems took 2 s
    (torch). Hidden folders (a checkout's .git) are left out."""
    from pkb_ray.problems.loader import builtin_dir

    root = builtin_dir() if source == "builtin" else Path(source.removeprefix("pkb:")).expanduser()
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.is_file() and "__pycache__" not in parts and not any(p.startswith(".") for p in parts):
            digest.update("/".join(parts).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def plan_digest(config: dict[str, Any], harness_version: str, problems_source: str) -> str:
    """What decides a sweep's plan, as one digest. `config`: the composed config (resolved)."""
    config = json.loads(json.dumps(config, default=str))  # a copy to edit
    for key in NOT_PLANNED:
        config.get("sweep", {}).pop(key, None)
    text = json.dumps([config, harness_version, problem_files_digest(problems_source)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def keep_plan(sweep_dir: Path, digest: str, record_ids: Iterable[str]) -> None:
    (Path(sweep_dir) / PLAN_FILE).write_text(
        json.dumps({"config_sha256": digest, "record_ids": sorted(record_ids)}), encoding="utf-8")


def cells_all_done(sweep_dir: Path, digest: str) -> int | None:
    """The number of planned cells when the last plan has this digest and every one of its
    cells is in the journal; None when there is anything to plan or run (or no usable plan)."""
    sweep_dir = Path(sweep_dir)
    try:
        saved = json.loads((sweep_dir / PLAN_FILE).read_text(encoding="utf-8"))
        if saved.get("config_sha256") != digest:
            return None
        planned = set(saved["record_ids"])
        done = {r.record_id for r in read_journal(sweep_dir / "journal.jsonl")}
    except (OSError, ValueError, KeyError, TypeError, RecordError):
        return None  # no usable plan: plan the ordinary way
    return len(planned) if planned and planned <= done else None


def remember_name(root: Path, digest: str, name: str) -> None:
    """Note which sweep a default-named command with this plan digest runs in."""
    folder = Path(root) / NAMES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{digest}.tmp"
    tmp.write_text(name, encoding="utf-8")
    tmp.replace(folder / digest)


def remembered_name(root: Path, digest: str) -> str | None:
    """The sweep a default-named command with this plan digest ran in, if one did."""
    try:
        name = (Path(root) / NAMES_DIR / digest).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return name if name and "/" not in name else None
