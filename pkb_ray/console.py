"""Output that fits the terminal: its width, lines wrapped to it, table columns dropped by
priority (and named) when a table is wider, figures rounded for a reader.

A table cut at the right edge would hide the speedup columns in any terminal narrower than
200 columns, and a wrapped table is unreadable: so columns are left out instead, the least
useful first, and a line says which and how to see them (`pkb report --wide`).
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import sys
import textwrap
from typing import IO, Any, Collection, Sequence

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


WRAPPED_MIN = 24
"""A column that may wrap (a title, a model id) is counted at most this wide when columns
are chosen; the table then gives it what the others leave."""


def fit_columns(columns: Sequence[str], rows: Sequence[dict[str, str]], priority: Sequence[str],
                width: int, wrappable: Collection[str] = (), per_column: int = 3,
                edge: int = 1) -> tuple[list[str], list[str]]:
    """(columns kept, in their order; columns left out) so that a rich table fits `width`:
    with a box, `per_column` 3 characters beside each column's text plus `edge` 1. `priority`:
    the most useful first; columns not named come after them; the first column is always
    kept, and once one column is left out every less useful one is too (a table never skips
    a rank). `wrappable` columns count WRAPPED_MIN at most: they wrap to what is left."""
    def col_w(c: str) -> int:
        natural = max([len(c)] + [len(str(r.get(c, ""))) for r in rows])
        return (min(natural, max(len(c), WRAPPED_MIN)) if c in wrappable else natural) + per_column

    rank = {c: i for i, c in enumerate(priority)}
    order = sorted(columns, key=lambda c: (c != columns[0], rank.get(c, len(rank))))
    kept: list[str] = []
    used = edge
    dropped = []
    for c in order:
        if not kept or (not dropped and used + col_w(c) <= width):
            kept.append(c)
            used += col_w(c)
        else:
            dropped.append(c)
    return [c for c in columns if c in kept], [c for c in columns if c in dropped]


@dataclasses.dataclass
class Listing:
    """A table of text rows fitted to the terminal: what `print_listing` shows."""

    rows: list[dict[str, str]]
    priority: Sequence[str] = ()
    """Columns, the most useful first (the first column is always shown)."""
    right: Collection[str] = ()
    """Columns of figures, right-justified."""
    wrappable: Collection[str] = ()
    """Columns of prose or long names that wrap within their cell rather than be left out."""
    wide_hint: str = ""
    """How to see every column (`pkb models list --wide`), said when some are left out."""


def print_listing(listing: Listing, wide: bool = False, out: IO[str] | None = None) -> list[str]:
    """Print `listing` as a borderless table no wider than the terminal (`wide`: every
    column, however wide); returns the columns left out, which a last line names."""
    from rich.table import Table
    from rich.text import Text

    rows = listing.rows
    cols: list[str] = []
    for row in rows:
        cols += [c for c in row if c not in cols]
    width = terminal_width()
    dropped: list[str] = []
    if not wide and cols:
        cols, dropped = fit_columns(cols, rows, listing.priority, width, listing.wrappable,
                                    per_column=2, edge=-2)
    natural = {c: max([len(c)] + [len(str(r.get(c, ""))) for r in rows]) for c in cols}
    wrapped = [c for c in cols if c in listing.wrappable and not wide]
    fixed = sum(natural[c] + 2 for c in cols if c not in wrapped) - 2 + 2 * len(wrapped)
    room = max(WRAPPED_MIN // 2, (width - fixed) // max(1, len(wrapped)))
    table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
    for c in cols:
        table.add_column(c, justify="right" if c in listing.right else "left", no_wrap=True,
                         overflow="fold", max_width=room if c in wrapped else None)
    for row in rows:
        table.add_row(*[Text(wrap_cell(str(row.get(c, "-")), room) if c in wrapped else str(row.get(c, "-")))
                        for c in cols])
    out = out or sys.stdout
    print(rendered(table, 100_000 if wide else width), file=out)
    if dropped:
        print(wrap(f"Left out to fit {width} columns: {', '.join(dropped)}."
                   + (f" {listing.wide_hint}" if listing.wide_hint else ""), width=width), file=out)
    return dropped


def rendered(renderable: Any, width: int) -> str:
    """A rich renderable as plain text `width` wide, each line without the padding rich
    leaves at its end."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, highlight=False, color_system=None).print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines())


def wrap_cell(text: str, width: int) -> str:
    """`text` in lines of at most `width`, broken after a space or a `/` (a model id or a
    path reads whole in parts; rich alone would cut it mid-word)."""
    import re

    lines, line = [], ""
    for token in re.split(r"(?<=[ /])", text):
        if line and len(line) + len(token.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += token
    lines.append(line.rstrip())
    return "\n".join(lines)


def readable(value: Any, digits: int = 4) -> str:
    """A value as a person reads it: floats to `digits` significant figures, records and
    dicts as `key=value` pairs (empty ones left out), lists in brackets (a 16-digit float or
    a dataclass repr says nothing more to a reader and runs past any terminal)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if math.isfinite(value) else str(value)
    if isinstance(value, dict):  # empty entries say nothing: left out
        return ", ".join(f"{k}={_nested(v, digits)}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(readable(v, digits) for v in value) + "]"
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):  # an enum
        return value.value
    return str(value)


def _nested(value: Any, digits: int) -> str:
    text = readable(value, digits)
    return f"{{{text}}}" if isinstance(value, dict) or dataclasses.is_dataclass(value) else text


def field_lines(name: str, value: Any, width: int | None = None, name_width: int = 20,
                note: str = "") -> list[str]:
    """`  name   value` (readable) and `note`, wrapped to `width`, continuations under the value."""
    width = width or terminal_width()
    lead = f"  {name:{name_width}s} "
    text = (value if isinstance(value, str) else readable(value)) + note
    return textwrap.wrap(text, width=width, initial_indent=lead, subsequent_indent=" " * len(lead),
                         break_long_words=False, break_on_hyphens=False) or [lead.rstrip()]
