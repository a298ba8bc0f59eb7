"""The on-disk cache of reference timings (what the last interleaved evaluation measured).

Keyed by (problem id, problem version, world size, size, device, hardware fingerprint,
harness version) and the timing settings. Reference outputs are not cached: they
come from secret seeds drawn for each evaluation, in milliseconds on the judges' GPUs.
Only the node writes here; no worker can see this directory. Writes are atomic (temp
file + rename), so a process killed mid-write leaves no torn entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any


def reference_key(problem_id: str, problem_version: str, world_size: int, size: str, device: str,
                  hardware_fingerprint: str, harness_version: str) -> str:
    desc = json.dumps([problem_id, problem_version, world_size, size, device,
                       hardware_fingerprint, harness_version])
    return f"{problem_id}-ws{world_size}-{size}-{hashlib.sha256(desc.encode()).hexdigest()[:16]}"


def reference_dir(cache_dir: str | os.PathLike, key: str) -> Path:
    return Path(cache_dir).expanduser() / "reference" / key


def timing_path(cache_dir: str | os.PathLike, key: str, timing_cfg: Any) -> Path:
    cfg = asdict(timing_cfg) if is_dataclass(timing_cfg) else dict(timing_cfg)
    h = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:10]
    return reference_dir(cache_dir, key) / f"timing-{h}.json"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # per thread too: a node actor's GPU groups may write one entry at the same moment
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
    tmp.write_bytes(data)
    tmp.replace(path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(obj, indent=1).encode())
