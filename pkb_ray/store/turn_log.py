"""Agent mode's per-turn log: each evaluated turn of an unfinished cell, so a resumed sweep
neither re-requests a turn (kernels_cache does that) nor re-evaluates one (this file).

Append-only JSON lines, fsync'd, written by the driver alone, like the journal. Each line
carries `version` (TURN_LOG_VERSION; lines written before versions load as version 1). A
torn final line from a killed writer is skipped; any other line that does not read raises
RecordError naming the file, line and key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pkb_ray.records import EvalResult, RecordError, from_plain, to_plain

TURN_LOG_VERSION = 1
"""Layout of a line: {version, cell_id, turn, outcome}. Version 1 (the first) is also what
lines without `version` were written in."""
_KEYS = {"version", "cell_id", "turn", "outcome"}


class TurnLog:
    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and self.path.exists():
            self.path.unlink()
        self._outcomes: dict[tuple[str, int], EvalResult] = {}
        if self.path.exists():
            self._load()
        self._fh = open(self.path, "a", encoding="utf-8")

    def _load(self) -> None:
        data = self.path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):
            # A torn final line from a killed writer: cut it so the next append starts clean.
            with open(self.path, "r+b") as fh:
                fh.truncate(len(complete))
        for lineno, line in enumerate(complete.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                key, outcome = _parse_line(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise RecordError(f"{self.path}:{lineno}: unreadable turn-log line: {exc}") from exc
            if key not in self._outcomes or _transient(self._outcomes[key]):  # the first lasting one
                self._outcomes[key] = outcome

    def get(self, cell_id: str, turn: int) -> EvalResult | None:
        """The turn's logged outcome; None for one that ended in a transient failure (a
        harness error logged by older code): that turn is evaluated again."""
        outcome = self._outcomes.get((cell_id, turn))
        return None if outcome is None or _transient(outcome) else outcome

    def put(self, cell_id: str, turn: int, outcome: EvalResult) -> None:
        if self.get(cell_id, turn) is not None:
            return
        line = json.dumps({"version": TURN_LOG_VERSION, "cell_id": cell_id, "turn": turn,
                           "outcome": to_plain(outcome)})
        self._fh.write(line + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._outcomes[(cell_id, turn)] = outcome

    def close(self) -> None:
        self._fh.close()


def _parse_line(rec: dict) -> tuple[tuple[str, int], EvalResult]:
    if not isinstance(rec, dict):
        raise RecordError(f"a turn-log line is a JSON object, not {type(rec).__name__}")
    unknown = sorted(set(rec) - _KEYS)
    if unknown:
        raise RecordError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    version = rec.get("version", 1)
    if version != TURN_LOG_VERSION:
        raise RecordError(f"turn-log version {version!r}: this pkb reads version {TURN_LOG_VERSION}")
    return (str(rec["cell_id"]), int(rec["turn"])), from_plain(EvalResult, rec["outcome"], "outcome")


def _transient(outcome: EvalResult) -> bool:
    return outcome.failure is not None and outcome.failure.is_transient
