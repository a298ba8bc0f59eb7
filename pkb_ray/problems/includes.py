"""`# pkb:include PATH` lines in the files kept in this repo: candidates and problems.

The five expert collectives share ~850 lines of kernels and launch machinery, and problems
that are variants of one another (moe_ep_forward_*, zero1/zero2, ...) share their inputs,
helpers and ground truth. A candidate and a reference must each be one self-contained
module when evaluated (a sandboxed worker sees no problem directory), so the shared part
lives once, in `problems/_shared/`, and every reader of such a *file* expands the include
lines. Only files on disk are expanded: a model's candidate arrives as a string and is
evaluated exactly as written.
"""

from __future__ import annotations

import re
from pathlib import Path

INCLUDE = re.compile(r"^# pkb:include (?P<path>\S+)[ \t]*$", re.MULTILINE)
_INCLUDE_BYTES = re.compile(rb"^# pkb:include \S+[ \t]*$", re.MULTILINE)


def has_includes(data: bytes) -> bool:
    """Whether a file's bytes hold an include line."""
    return bool(_INCLUDE_BYTES.search(data))


class IncludeError(ValueError):
    """An include line names a file that is missing, outside its tree, or nested."""


def read_candidate_file(path: Path, root: Path | None = None) -> str:
    """The file's text with each `# pkb:include REL` line replaced by REL's text.

    REL is relative to the file and must stay inside `root` (default: the file's
    grandparent, i.e. the problems directory for problems/<id>/expert.py). Included files
    may not include further files: one level keeps the expansion obvious."""
    path = Path(path)
    root = Path(root or path.resolve().parent.parent).resolve()
    text = path.read_text()

    def expand(match: re.Match) -> str:
        target = (path.resolve().parent / match["path"]).resolve()
        if root not in target.parents:
            raise IncludeError(f"{path}: include {match['path']!r} is outside {root}")
        if not target.is_file():
            raise IncludeError(f"{path}: include {match['path']!r} not found ({target})")
        body = target.read_text()
        if INCLUDE.search(body):
            raise IncludeError(f"{target}: an included file may not include others")
        return f"# ---- begin {match['path']} (inlined by pkb_ray) ----\n{body.rstrip()}\n# ---- end {match['path']} ----\n\n"

    return INCLUDE.sub(expand, text)


def read_expanded_bytes(path: Path, root: Path | None = None) -> bytes:
    """What a problem's version hashes for one file: its bytes as they are when it includes
    nothing (so a file without include lines keeps the version it always had), else its
    expanded text, so that an edit of a shared file changes every includer's version."""
    data = Path(path).read_bytes()
    if not has_includes(data):
        return data
    return read_candidate_file(path, root).encode()
