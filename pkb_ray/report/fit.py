"""Output that fits the terminal: its width, lines wrapped to it, table columns dropped by
priority (and named) when a table is wider.

A table cut at the right edge hid the speedup columns in any terminal narrower than 200
columns (2026-11-24); a wrapped table is unreadable, so columns are left out instead, the
least useful first, and a line says which and how to see them (`pkb report --wide`).
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Sequence

DEFAULT_WIDTH = 100
"""Without a terminal and without COLUMNS (a log, CI): a width that reads in any viewer."""


def terminal_width() -> int:
    """COLUMNS when set, else the terminal's width, else DEFAULT_WIDTH."""
    return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def wraps_messages() -> bool:
    """Messages wrap on a terminal or where COLUMNS says a width; a log without COLUMNS keeps
    one message a line, so that grep finds a phrase whole."""
    import os
    import sys

    return bool(os.environ.get("COLUMNS")) or sys.stderr.isatty()


def wrap(text: str, width: int | None = None, indent: str = "  ") -> str:
    """Each line of `text` wrapped at spaces to `width` (continuations indented); words
    (paths, URLs) are never broken, so a line longer than `width` is one unbreakable word.
    Without `width`: the terminal's, or no wrapping at all where wraps_messages() is False."""
    if width is None and not wraps_messages():
        return text
    width = width or terminal_width()
    out = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width=width, subsequent_indent=lead + indent,
                             break_long_words=False, break_on_hyphens=False)
    return "\n".join(out)


def fit_columns(columns: Sequence[str], rows: Sequence[dict[str, str]], priority: Sequence[str],
                width: int) -> tuple[list[str], list[str]]:
    """(columns kept, in their order; columns left out) so that a rich table with a box
    (3 characters per column plus 1) fits `width`. `priority`: the most useful first;
    columns not named come after them; the first column is always kept, and once one
    column is left out every less useful one is too (a table never skips a rank)."""
    def col_w(c: str) -> int:
        return max([len(c)] + [len(str(r.get(c, ""))) for r in rows]) + 3

    rank = {c: i for i, c in enumerate(priority)}
    order = sorted(columns, key=lambda c: (c != columns[0], rank.get(c, len(rank))))
    kept: list[str] = []
    used = 1
    dropped = []
    for c in order:
        if not kept or (not dropped and used + col_w(c) <= width):
            kept.append(c)
            used += col_w(c)
        else:
            dropped.append(c)
    return [c for c in columns if c in kept], [c for c in columns if c in dropped]
