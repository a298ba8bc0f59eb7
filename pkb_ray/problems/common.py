"""What the loader and the PKB importer share: the result types and file helpers.

Kept apart so that loader.py can import pkb_import.py (and not the other way round).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import linecache
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable

from pkb_ray.problems.includes import has_includes, read_candidate_file
from pkb_ray.problems.spec import Problem, ProblemError


class ProblemLoadError(Exception):
    """Raised by load_problem; `.error` is the structured ProblemError."""

    def __init__(self, error: ProblemError):
        super().__init__(str(error))
        self.error = error


@dataclass
class ProblemSet:
    """What load_problems returns: the problems that loaded and the errors of those that did not."""

    problems: dict[str, Problem] = field(default_factory=dict)
    """id -> Problem, in a stable order (directory name order for builtin/directory sources)."""
    errors: list[ProblemError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.problems)


def unknown_id_error(pid: str, known: list[str], where: str) -> ProblemError:
    close = difflib.get_close_matches(pid, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; {len(known)} problems exist there"
    return ProblemError(pid, where, "id", f"unknown problem id {pid!r}{hint}")


def files_version(paths: list[Path], unversioned: re.Pattern[bytes] | None = None,
                  read: Callable[[Path], bytes] = Path.read_bytes) -> str:
    """sha256 over (name, bytes) of each file, first 16 hex chars: part of every cache key.
    Bytes matching `unversioned` are left out (what changes no result); `read` gives a
    file's bytes (the loader's expands `# pkb:include` lines)."""
    h = hashlib.sha256()
    for p in paths:
        data = read(p)
        if unversioned is not None:
            data = unversioned.sub(b"", data)
        h.update(p.name.encode() + b"\0")
        h.update(data + b"\0")
    return h.hexdigest()[:16]


_IMPORT_LOCKS: dict[str, threading.RLock] = {}
"""One lock per module name. A node actor's GPU groups evaluate in threads of one process,
often the same problem at once: two imports of one file would each put their half-made
module under the same sys.modules name while the other executes (dataclasses and pickling
look it up there). Imports under different names share nothing, so one group importing its
problem never waits for another group's."""
_IMPORT_LOCKS_GUARD = threading.Lock()


def _import_lock(module_name: str) -> threading.RLock:
    with _IMPORT_LOCKS_GUARD:
        return _IMPORT_LOCKS.setdefault(module_name, threading.RLock())


def import_file(path: Path, module_name: str) -> ModuleType:
    """Import one .py file as a fresh module (not cached in sys.modules under a clashing name).
    Its `# pkb:include` lines are expanded first (includes.py); such a file's code is
    registered with linecache under "PATH (expanded)", so tracebacks show the lines that ran."""
    path = Path(path)
    if has_includes(path.read_bytes()):
        return _import_source(read_candidate_file(path), f"{path} (expanded)", module_name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    with _import_lock(module_name):
        sys.modules[module_name] = module  # dataclasses/pickling inside the module need it
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
    return module


def _import_source(source: str, filename: str, module_name: str) -> ModuleType:
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = ModuleType(module_name)
    module.__file__ = filename
    with _import_lock(module_name):
        sys.modules[module_name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
    return module
