"""The sweep journal: an append-only, fsync'd JSON-lines file, the source of truth for
which cells are done.

One line per recorded cell, keyed by its record id (the cell id and a digest of everything
that changed its result): the same cell made under other settings is a new line beside the
old one, and `current_records` says which line a report shows. A SIGKILL can tear at most the line being written; opening
the journal cuts such a torn tail, so a re-run neither loses a complete line nor parses
half of one. MLflow is reconciled from this file, never the other way round.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pkb_ray.records import CellResult, RecordError


class Journal:
    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and self.path.exists():
            archived = self.path.with_name(f"{self.path.stem}.{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
            os.replace(self.path, archived)
        self._records: dict[str, CellResult] = {}
        self._load()
        self._fh = open(self.path, "a", encoding="utf-8")

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete = _complete_lines(data)
        if len(complete) != len(data):
            # A torn final line from a killed writer: drop it so the next append starts clean.
            with open(self.path, "r+b") as fh:
                fh.truncate(len(complete))
                fh.flush()
                os.fsync(fh.fileno())
        self._records = _parse(complete, self.path)

    def append(self, result: CellResult) -> bool:
        """Record a cell durably. Returns False (and writes nothing) if it was already recorded."""
        record_id = result.record_id
        if record_id in self._records:
            return False
        if not result.recorded_at:
            result.recorded_at = time.time()
        self._fh.write(result.to_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._records[record_id] = result
        return True

    def done_ids(self) -> set[str]:
        """Record ids (see CellResult.record_id) of every recorded cell."""
        return set(self._records)

    def records(self) -> list[CellResult]:
        return list(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def close(self) -> None:
        self._fh.close()


def current_records(records: list[CellResult], planned: dict[str, str] | None = None) -> list[CellResult]:
    """One record per cell, the one a report shows: for a cell in `planned` (cell id ->
    record id) only the record made under this invocation's settings (none while it is
    not made yet); for any other cell the latest recorded. Records that a later one
    superseded (another prompt, problem version or sampling) stay in the journal, unshown."""
    planned = planned or {}
    by_cell: dict[str, CellResult] = {}
    for r in records:  # journal order: a later record of a cell replaces an earlier one
        cell_id = r.key.cell_id
        if cell_id not in planned or planned[cell_id] == r.record_id:
            by_cell[cell_id] = r
    return list(by_cell.values())


def read_journal(path: Path) -> list[CellResult]:
    """Records of a journal without opening it for writing (for `pkb report`). Raises
    RecordError naming the file, line and key of a line it cannot read."""
    if not Path(path).exists():
        raise FileNotFoundError(f"no journal at {path}")
    return list(_parse(_complete_lines(Path(path).read_bytes()), Path(path)).values())


def _complete_lines(data: bytes) -> bytes:
    """Everything up to the last newline: a torn tail from a killed writer is not a record."""
    return data[: data.rfind(b"\n") + 1]


def _parse(complete: bytes, path: Path) -> dict[str, CellResult]:
    records: dict[str, CellResult] = {}
    for lineno, line in enumerate(complete.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = CellResult.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:
            raise RecordError(f"{path}:{lineno}: unreadable journal line: {exc}") from exc
        records.setdefault(record.record_id, record)
    return records
