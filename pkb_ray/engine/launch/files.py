"""Reading what a sandbox wrote, and copying trees into and out of one, without trusting it.

A sandbox's user owns its directory and may put a symlink, a FIFO or a hard link where a
log or a build should be: every open here is relative to a directory opened without
following a link, refuses anything but a regular file, and is bounded in size.
"""

from __future__ import annotations

import os
import shutil
import stat

_UNTRUSTED_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How the harness opens what a sandbox wrote: its user owns the directory and may have put
a symlink (to /proc/self/environ, to mlflow.db) or a FIFO where a log should be. Followed
with the harness's rights, it would read the harness's secrets into a result the model sees
(or block on the FIFO)."""


def _open_regular(path: str, dir_fd: int | None = None) -> int | None:
    """An fd on `path` if it is a regular file reached without a symlink, else None."""
    try:
        fd = os.open(path, _UNTRUSTED_OPEN, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:  # a hard link may name a file of the harness's
        os.close(fd)
        return None
    return fd


def read_sandbox_file(workdir: str, name: str, max_bytes: int, tail: bool = False) -> bytes:
    """Up to max_bytes (the last ones when `tail`) of workdir/name: b"" unless it is a
    regular file, reached without a symlink in the directory or the name."""
    try:
        dfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        fd = _open_regular(name, dir_fd=dfd) if "/" not in name else None
    finally:
        os.close(dfd)
    if fd is None:
        return b""
    with os.fdopen(fd, "rb") as f:
        if tail:
            f.seek(max(0, os.fstat(fd).st_size - max_bytes))
        return f.read(max_bytes)


def sandbox_file_bytes(workdir: str, name: str) -> int:
    """The size of workdir/name if it is a regular file reached without a link, else 0."""
    try:
        dfd = os.open(workdir, _DIR_OPEN_NOFOLLOW)
    except OSError:
        return 0
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return 0
    finally:
        os.close(dfd)
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


_DIR_OPEN_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


MAX_TREE_BYTES = 2 << 30
"""What a copied tree may hold (a CUDA extension's build is tens of MB): a build that left a
1 TB sparse file, or millions of files, fills no disk."""
MAX_TREE_FILES = 20_000


class TreeRefused(ValueError):
    """A tree to copy out of (or into) a sandbox broke a rule; the message says which."""


_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def copy_regular_tree(src: str, dst: str, owner: tuple[int, int] | None = None,
                      max_bytes: int = MAX_TREE_BYTES, max_files: int = MAX_TREE_FILES) -> None:
    """src's directories and regular files, copied with their times, into dst (made here, or
    an empty directory). Symlinks, FIFOs and devices are left out; setuid bits and write
    bits for others are dropped; `owner` (uid, gid) owns what is made. Both sides may be
    what a sandbox's user can change while this runs: every open is relative to a
    directory fd opened without following a link, targets are created O_EXCL. Raises
    TreeRefused past max_bytes or max_files, or when dst is not a plain directory."""
    # dst's parent (a sandbox's directory, which its user could swap for a link) is opened
    # without following a link, and dst is made and opened relative to it.
    parent, base = os.path.split(os.path.abspath(dst))
    try:
        os.makedirs(parent, exist_ok=True)
        pfd = os.open(parent, _DIR_OPEN)
        try:
            try:
                os.mkdir(base, 0o700, dir_fd=pfd)
            except FileExistsError:
                pass
            top = os.open(base, _DIR_OPEN, dir_fd=pfd)
        finally:
            os.close(pfd)
    except OSError as exc:
        raise TreeRefused(f"{dst}: not a plain directory ({exc.strerror})") from exc
    out = {".": top}
    total = files = 0
    try:
        if owner is not None:
            os.fchown(top, *owner)
        if os.path.islink(src) or not os.path.isdir(src):
            return
        for root, dirs, names, sfd in os.fwalk(src, follow_symlinks=False):
            rel = os.path.relpath(root, src)
            dfd = out.get(rel)
            if dfd is None:  # a directory that was a link when its parent was listed
                continue
            for d in dirs:
                if not stat.S_ISDIR(os.stat(d, dir_fd=sfd, follow_symlinks=False).st_mode):
                    continue
                try:
                    os.mkdir(d, 0o700, dir_fd=dfd)
                    out[os.path.normpath(os.path.join(rel, d))] = fd = os.open(d, _DIR_OPEN, dir_fd=dfd)
                except OSError as exc:
                    raise TreeRefused(f"{dst}/{rel}/{d}: {exc.strerror}") from exc
                os.fchmod(fd, 0o755)
                if owner is not None:
                    os.fchown(fd, *owner)
            for name in names:
                try:
                    fin = os.open(name, _UNTRUSTED_OPEN, dir_fd=sfd)
                except OSError:
                    continue  # a link (O_NOFOLLOW), or gone
                with os.fdopen(fin, "rb") as f:
                    st = os.fstat(fin)
                    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                        continue
                    files, total = files + 1, total + st.st_size
                    if files > max_files or total > max_bytes:
                        raise TreeRefused(f"{src}: more than {max_files} files or {max_bytes >> 20} MiB")
                    try:
                        fout = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                       0o600, dir_fd=dfd)
                    except OSError as exc:
                        raise TreeRefused(f"{dst}/{rel}/{name}: {exc.strerror}") from exc
                    with os.fdopen(fout, "wb") as g:
                        shutil.copyfileobj(f, g, 1 << 20)
                        g.flush()
                        os.fchmod(fout, stat.S_IMODE(st.st_mode) & 0o755)
                        if owner is not None:
                            os.fchown(fout, *owner)
                        os.utime(fout, ns=(st.st_atime_ns, st.st_mtime_ns))  # torch's build checks times
    finally:
        for fd in out.values():
            os.close(fd)

