"""Where sandboxes live on the host: one run root per process, and what is left behind.

Every directory a process makes for sandboxes (their working directories, the package's
code copy, the NCCL stub) lies in its run root, removed when the process exits; a root whose
process is gone is removed by the next process that makes one. remove_tree removes whatever
tree a sandbox left, however deep, unreadable or linked.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Callable

import pkb_ray
from pkb_ray.engine.launch import owners
from pkb_ray.engine.launch.bounds import close_run_group
from pkb_ray.engine.launch.mounts import detach_mounts

@functools.lru_cache(maxsize=1)
def package_copy() -> str:
    """The package's code, copied once per version to a directory anyone may read.

    The sandbox user must be able to reach what it is shown, and a checkout often lies
    under a home directory it may not enter (/root is 0700). Copied, not linked: the
    checkout's other files (kernels_cache/, sweeps/, mlflow.db) stay out of sight."""
    src = Path(pkb_ray.__file__).resolve().parent
    files = sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for p in files:
        digest.update(str(p.relative_to(src)).encode() + b"\0" + p.read_bytes())
    return public_dir(f"code-{digest.hexdigest()[:16]}", lambda d: [
        _copy_file(p, d / "pkb_ray" / p.relative_to(src)) for p in files])


def _copy_file(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def public_dir(name: str, fill: "Callable[[Path], object]") -> str:
    """A directory under this process's run root, filled once by `fill`, then readable by
    all and writable by none but its owner (made under a temporary name, renamed when whole)."""
    root = Path(run_root()) / "public"
    root.mkdir(mode=0o755, exist_ok=True)
    os.chmod(root, 0o755)
    final = root / name
    if not final.exists():
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
        fill(tmp)
        for dirpath, dirnames, filenames in os.walk(tmp):
            os.chmod(dirpath, 0o755)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o755 if os.access(os.path.join(dirpath, f), os.X_OK) else 0o644)
        try:
            tmp.rename(final)
        except OSError:  # another process made it meanwhile
            remove_tree(str(tmp))
    return str(final)



RUN_ROOT_PREFIX = "pkb_run_"
"""Every directory a process makes for sandboxes (their working directories, the package's
code copy, the NCCL stub) lies in one run root under TMPDIR, pkb_run_<pid>_<pid ns>_*, removed when
the process exits (also on an error, or on SIGTERM where the entry point turns it into an
exit). A root whose process is gone (SIGKILL) is removed by the next process that makes one."""
live: "weakref.WeakSet[Any]" = weakref.WeakSet()
"""Every SandboxProcess this process started (process.py adds each): stopped when the run
root goes."""
_root: tuple[int, str] | None = None
_root_lock = threading.Lock()


def run_root() -> str:
    """This process's run root (made on first use; a forked child makes its own)."""
    global _root
    with _root_lock:
        if _root is None or _root[0] != os.getpid():
            _remove_stale_roots()
            path = tempfile.mkdtemp(prefix=owners.stamp(RUN_ROOT_PREFIX))
            os.chmod(path, 0o711)  # the sandbox's user passes through to its own directory
            _root = (os.getpid(), path)
            atexit.register(_remove_run_root, os.getpid(), path)
        return _root[1]


def exit_on_sigterm() -> None:
    """Make SIGTERM an exit (status 143) in this process, so the run root is removed: the
    default action ends the process without atexit. Only from the main thread, and only
    where nobody installed a handler already."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def close_run_root() -> None:
    """Stop this process's sandboxes and remove its run root now (a node actor at the end of
    a sweep: Ray ends actors without running their exit handlers, which left a root with
    the prewarmed sandbox behind). A later sandbox makes a new root."""
    global _root
    with _root_lock:
        if _root is not None and _root[0] == os.getpid():
            _remove_run_root(*_root)
        _root = None
    package_copy.cache_clear()
    close_run_group()


def close_run_root_if_idle() -> None:
    """close_run_root() unless a sandbox of this process still runs (a node's prewarmed one):
    for processes that start sandboxes now and then (a Ray worker that prebuilds), which Ray
    may end without their exit handlers."""
    if not any(p.alive() for p in list(live)):
        close_run_root()


def _remove_run_root(pid: int, path: str) -> None:
    if os.getpid() != pid:  # a forked child exits: the root is its parent's
        return
    for proc in list(live):
        proc.kill(wait=False)
    remove_tree(path)


def _remove_stale_roots() -> None:
    """Run roots of this user's processes that are gone (same pid namespace)."""
    base = tempfile.gettempdir()
    for name in owners.orphans(base, RUN_ROOT_PREFIX):
        try:
            st = os.lstat(os.path.join(base, name))
        except OSError:
            continue
        if st.st_uid == os.getuid() and stat.S_ISDIR(st.st_mode):
            remove_tree(os.path.join(base, name))


def remove_tree(path: str) -> None:
    """Remove `path` and everything under it, whatever a sandbox left there: a tree thousands
    of levels deep (shutil.rmtree recurses and raises RecursionError at ~1000; a 3000-level
    tree survived it, 312 MB left on the host), directories it made unreadable or
    unwritable, links (never followed). GNU rm and chmod walk with fts, which has no depth
    limit and does not follow links in the tree; shutil is the fallback where they fail."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    detach_mounts(path)
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        subprocess.run(["chmod", "-R", "u+rwX", "--", path], check=False, **quiet)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", path], check=False, **quiet)
    except OSError:
        pass
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)

