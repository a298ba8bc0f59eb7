"""A config section as flat `key: value` text: what a cell's identity and a sweep's name are
made of, so the same setting reads the same wherever it is recorded."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def canonical(value: Any) -> str:
    """Canonical text of a config value (JSON, so 2 and 2.0 differ as the config does;
    a string as itself)."""
    if isinstance(value, str):
        return value
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def flatten(prefix: str, obj: Any) -> dict[str, str]:
    """`{prefix.field.subfield: canonical text}` for every leaf of a dataclass section."""
    if dataclasses.is_dataclass(obj):
        out: dict[str, str] = {}
        for f in dataclasses.fields(obj):
            out.update(flatten(f"{prefix}.{f.name}", getattr(obj, f.name)))
        return out
    return {prefix: canonical(obj)}
