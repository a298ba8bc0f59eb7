"""The node's timing mode per problem: held behind the launch gate or not, and calls per
sample, kept on disk beside the reference timings (reference_timings.py) under the same key
(problem, version, world size, size, device, hardware fingerprint, harness version) and
timing settings.

The first evaluation of a problem on a node decides its mode from the reference's probe; the
node writes it once and every later evaluation reads it. Written with link(2): the first
writer wins and a later one, from another GPU group or another process on the node, keeps
what is there, so no evaluation ever sees a mode change under it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pkb_ray.engine.node import reference_timings
from pkb_ray.engine.protocol.timing import TimingMode

_lock = threading.Lock()


def mode_path(cache_dir: str | os.PathLike, key: str, timing_cfg: Any) -> Path:
    timing = reference_timings.timing_path(cache_dir, key, timing_cfg)
    return timing.with_name(timing.name.replace("timing-", "mode-", 1))


def load_mode(cache_dir: str | os.PathLike, key: str, timing_cfg: Any) -> TimingMode | None:
    """The kept mode, or None where there is none (or it cannot be read: decided anew)."""
    d = reference_timings.read_json(mode_path(cache_dir, key, timing_cfg))
    if not isinstance(d, dict):
        return None
    held, k = d.get("held"), d.get("calls_per_sample")
    if not isinstance(held, bool) or not isinstance(k, int) or isinstance(k, bool) or k < 1:
        return None
    return TimingMode(held=held, calls_per_sample=k)


def remember_mode(cache_dir: str | os.PathLike, key: str, timing_cfg: Any, mode: TimingMode,
                  decided_by: str) -> TimingMode:
    """Keep `mode` unless one is kept already; returns the one kept."""
    path = mode_path(cache_dir, key, timing_cfg)
    with _lock:
        kept = load_mode(cache_dir, key, timing_cfg)
        if kept is not None:
            return kept
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(json.dumps({"held": mode.held, "calls_per_sample": mode.calls_per_sample,
                                   "decided_by": decided_by}))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    return load_mode(cache_dir, key, timing_cfg) or mode
