"""How many times each cell's evaluation ended in harness_error: an append-only JSON-lines
file beside the journal, one line per such try.

harness_error is transient (records.FAILURE_TABLE): the cell is deferred and a re-run tries
it again. A cell that fails the harness every time would then be retried forever and never
shown, and a candidate that found a way to look like a harness fault would hide a wrong
answer that way (a frame nested a million deep did, on main at 9c78ee4). So the tries are
counted across runs, and after MAX_TRIES the cell is recorded with its count.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

MAX_TRIES = 3
"""A harness fault of our own (a sandbox that did not start on a loaded node) rarely repeats
three times on one cell; one that does is recorded, so a report shows it."""


class HarnessTries:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._counts: dict[str, int] = {}
        if self.path.exists():
            data = self.path.read_bytes()
            for line in data[: data.rfind(b"\n") + 1].decode("utf-8", "replace").splitlines():
                try:
                    rid = json.loads(line)["record_id"]
                except (ValueError, KeyError, TypeError):
                    continue  # a torn or foreign line counts nothing
                if isinstance(rid, str):
                    self._counts[rid] = self._counts.get(rid, 0) + 1

    def add(self, record_id: str, message: str) -> int:
        """Count one more harness_error of `record_id`, durably; returns its count so far."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"record_id": record_id, "message": message[:300]}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._counts[record_id] = self._counts.get(record_id, 0) + 1
        return self._counts[record_id]

    def count(self, record_id: str) -> int:
        return self._counts.get(record_id, 0)
