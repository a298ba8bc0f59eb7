"""Agent mode's per-turn log: each evaluated turn of an unfinished cell, so a resumed sweep
neither re-requests a turn (kernels_cache does that) nor re-evaluates one (this file).

Append-only JSON lines, fsync'd, written by the driver alone, like the journal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pkb_ray.records import EvalResult, from_plain, to_plain


class TurnLog:
    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and self.path.exists():
            self.path.unlink()
        self._outcomes: dict[tuple[str, int], EvalResult] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # torn tail of a killed writer
                key = (rec["cell_id"], int(rec["turn"]))
                self._outcomes.setdefault(key, from_plain(EvalResult, rec["outcome"]))
        self._fh = open(self.path, "a", encoding="utf-8")

    def get(self, cell_id: str, turn: int) -> EvalResult | None:
        return self._outcomes.get((cell_id, turn))

    def put(self, cell_id: str, turn: int, outcome: EvalResult) -> None:
        if (cell_id, turn) in self._outcomes:
            return
        line = json.dumps({"cell_id": cell_id, "turn": turn, "outcome": to_plain(outcome)})
        self._fh.write(line + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._outcomes[(cell_id, turn)] = outcome

    def close(self) -> None:
        self._fh.close()
