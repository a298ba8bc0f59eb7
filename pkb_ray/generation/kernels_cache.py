"""`kernels_cache/`: a write-through store of every paid model response (KernelsCache).

One JSON file per key, `<root>/<key[:2]>/<key>.json`. A key is the sha256 of what
determines an answer: the model (litellm id and endpoint), the problem and its version,
the attempt, the turn, the prompt hash (of the full conversation in agent mode) and the
sampling parameters. A cached entry is never requested again, in this sweep or any later
one over the same cells, and `generation.replay_only=true` evaluates from it alone.

What is cached: answers the model gave, with or without code (`no_code` is the model's
answer; asking again would pay twice). Not cached: transient failures (rate limits,
timeouts, 5xx: a re-run retries them) and `auth` / `bad_request` (no answer was paid
for, and the fix is a new key or a config change, which must not need a cache purge).

Writes are atomic (a temporary file in the same directory, fsync, os.replace), so a
SIGKILL leaves either the old state or the whole entry, never a torn file. Entries never
hold API keys: the client never hands them out, and `put` refuses an entry that contains
the value of the model's key variable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from pkb_ray.records import FailureClass

log = logging.getLogger(__name__)

CACHE_SCHEMA = 1


def cache_key(*, model: str, api_base: str | None, problem_id: str, problem_version: str,
              attempt: int, turn: int, prompt_hash: str, sampling: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of everything that determines the answer."""
    fields = {
        "schema": CACHE_SCHEMA,
        "model": model,
        "api_base": api_base,
        "problem": problem_id,
        "problem_version": problem_version,
        "attempt": int(attempt),
        "turn": int(turn),
        "prompt_hash": prompt_hash,
        "sampling": sampling,
    }
    canon = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode()).hexdigest()


def is_cacheable(failure: FailureClass | str | None) -> bool:
    """Only answers the model gave: success or no_code."""
    if failure is None:
        return True
    return FailureClass(failure) is FailureClass.NO_CODE


class KernelsCache:
    """Write-through store of model responses; any number of readers, atomic writers."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(os.path.expanduser(str(root)))

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry, or None when absent (or unreadable, which atomic writes rule out
        unless the file was edited by hand: it is then ignored and logged)."""
        p = self.path(key)
        try:
            with open(p, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("kernels_cache: ignoring unreadable entry %s (%s)", p, e)
            return None

    def __contains__(self, key: str) -> bool:
        return self.path(key).exists()

    def put(self, key: str, entry: dict[str, Any], *, secret_env: str | None = None) -> Path:
        """Store `entry` under `key` atomically. `secret_env` names the key variable of
        the model; an entry containing its value is refused (ValueError)."""
        data = json.dumps(entry, sort_keys=True, ensure_ascii=False, indent=1, default=str)
        secret = os.environ.get(secret_env) if secret_env else None
        if secret and len(secret) >= 8 and secret in data:
            raise ValueError(f"kernels_cache: entry contains the value of ${secret_env}; refused")
        p = self.path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=p.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        return p

    def remove_stale_tmp(self, max_age_s: float = 3600.0) -> int:
        """Delete temporary files a killed writer left behind (never a live write: those
        are younger than `max_age_s`). Returns how many were removed."""
        import time

        now, n = time.time(), 0
        for p in self.root.glob("??/.*.tmp"):
            try:
                if now - p.stat().st_mtime > max_age_s:
                    p.unlink()
                    n += 1
            except FileNotFoundError:
                pass
        return n

    def keys(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("??/*.json"))
