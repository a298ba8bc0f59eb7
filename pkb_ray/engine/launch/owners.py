"""Names a process stamps with its pid and pid namespace (`<prefix><pid>_<ns>_<rest>`), so
that whatever it leaves behind when it is killed (run roots, run groups) is found and
removed by the next process that makes one: a pid means something only in its own
namespace (two containers may share a TMPDIR; one must not take the other's live root for
dead)."""

from __future__ import annotations

import os


def pid_namespace() -> int:
    """This process's pid namespace's inode (0 where it cannot be read)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def stamp(prefix: str) -> str:
    """The start of a name this process owns."""
    return f"{prefix}{os.getpid()}_{pid_namespace()}_"


def orphans(parent: str, prefix: str) -> list[str]:
    """The names in `parent` stamped by processes of this pid namespace that are gone."""
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    ns_here, found = pid_namespace(), []
    for name in names:
        if not name.startswith(prefix):
            continue
        try:
            pid_text, ns_text, _ = name[len(prefix):].split("_", 2)
            pid, ns = int(pid_text), int(ns_text)
        except ValueError:
            continue
        if ns != ns_here or pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            found.append(name)
        except PermissionError:  # it lives, as another user
            pass
    return found
