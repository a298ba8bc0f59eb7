"""One episode's journal: an append-only JSONL of typed records, the unit of resumption.

    <sweep dir>/agent/<model>/<problem>/<attempt>.jsonl

Records, in order: a header (the episode's identity), then per step a model record and,
per tool call, `tool_start` then `tool_result`, and last an `end`. Each line is written
whole, flushed and fsynced before the step goes on, so a SIGKILL leaves at most a torn
last line (skipped on reading). A tool call with a `tool_result` is never run again; one
with only a `tool_start` was cut off and runs again (its start is kept: the count of
starts is how many times a tool really ran).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

JOURNAL_VERSION = 1


class JournalError(ValueError):
    """A journal that cannot be resumed from; the message names the file and line."""


@dataclass
class Header:
    identity: dict[str, str]
    kind: str = "header"


@dataclass
class ModelStep:
    step: int
    cache_key: str
    cached: bool
    text: str
    tool_calls: list[dict[str, str]]
    """[{id, name, arguments}] as the model sent them."""
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    kind: str = "model"


@dataclass
class ToolStart:
    step: int
    call_id: str
    tool: str
    kind: str = "tool_start"


@dataclass
class ToolDone:
    step: int
    call_id: str
    tool: str
    content: str
    """Exactly what the model was shown (a replay shows the same bytes)."""
    result: dict[str, Any] | None
    wall_s: float = 0.0
    device_s: float = 0.0
    final: dict[str, Any] | None = None
    kind: str = "tool_result"


@dataclass
class End:
    reason: str
    detail: str
    final: dict[str, Any] | None = None
    usage: dict[str, float] = field(default_factory=dict)
    kind: str = "end"


_KINDS: dict[str, type] = {"header": Header, "model": ModelStep, "tool_start": ToolStart,
                           "tool_result": ToolDone, "end": End}
Record = Header | ModelStep | ToolStart | ToolDone | End


class EpisodeJournal:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.records: list[Record] = self._load()

    def _load(self) -> list[Record]:
        if not self.path.exists():
            return []
        out: list[Record] = []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines, 1):
            try:
                d = json.loads(line)
            except ValueError:
                if i == len(lines):
                    break  # the torn tail a kill leaves
                raise JournalError(f"{self.path}:{i}: not JSON") from None
            if d.get("version") != JOURNAL_VERSION or d.get("kind") not in _KINDS:
                raise JournalError(f"{self.path}:{i}: unknown record (kind {d.get('kind')!r}, "
                                   f"version {d.get('version')!r}; this code reads version {JOURNAL_VERSION})")
            d.pop("version")
            cls = _KINDS[d["kind"]]
            try:
                out.append(cls(**d))
            except TypeError as e:
                raise JournalError(f"{self.path}:{i}: {d['kind']} record: {e}") from None
        return out

    def append(self, rec: Record) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"version": JOURNAL_VERSION, **asdict(rec)}, sort_keys=True) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.records.append(rec)

    # -- what a resumed episode asks -----------------------------------------------------
    def header(self) -> Header | None:
        return next((r for r in self.records if isinstance(r, Header)), None)

    def end(self) -> End | None:
        return next((r for r in self.records if isinstance(r, End)), None)

    def model_step(self, step: int) -> ModelStep | None:
        return next((r for r in self.records if isinstance(r, ModelStep) and r.step == step), None)

    def tool_done(self, step: int, call_id: str) -> ToolDone | None:
        return next((r for r in self.records if isinstance(r, ToolDone)
                     and r.step == step and r.call_id == call_id), None)

    def tool_starts(self) -> list[ToolStart]:
        return [r for r in self.records if isinstance(r, ToolStart)]
