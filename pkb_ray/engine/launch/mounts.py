"""What a sandbox sees: bubblewrap's binds, the import paths it is shown, and the sized tmpfs
mounts that bound what it may write.

Under bubblewrap a worker sees: the system's libraries and Python (read-only), the package's
own code (read-only, at PKG_MOUNT), a private writable /tmp shared by the candidate's ranks,
its own GPUs' device files (gpus.py), and a network namespace of its own (loopback only). It does not see
the caches, kernels_cache/, sweeps/, the tracking store, the checkout or any home directory.
Measured on the H200 nodes (docs/design.md): CUDA and 2-rank symmetric memory work inside,
also as an unprivileged user with --unshare-user.

What a sandbox may write is bounded where the evaluator runs as root: its working directory
(the worker's /tmp) is a tmpfs of plan.TMP_QUOTA_BYTES and TMP_QUOTA_FILES mounted on the
host, and under bubblewrap its /dev/shm is another such (mounted inside the first, as
SHM_DIR, and bound there). A write past either fails (ENOSPC) in the candidate's process;
removing the sandbox is one lazy unmount, whatever tree it left.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import sys
from pathlib import Path

import pkb_ray
from pkb_ray.engine.launch.gpus import PROC_GPUS, GpuView

INSIDE_UID = 1000
PKG_MOUNT = "/opt/pkb"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd", "group", "hosts",
        "localtime", "alternatives", "os-release", "ssl", "ca-certificates", "host.conf", "gai.conf")


TMP_QUOTA_FILES = 1 << 16
"""Files and directories a sandbox's /tmp (and /dev/shm) may hold. tmpfs bounds bytes by
`size=` and files only by `nr_inodes=` (its default is half the machine's pages: millions of
empty files, each costing the kernel memory that no byte quota counts; an adversarial
review's gap). An extension's build, the largest honest tree, is tens of files."""
SHM_DIR = ".shm"
"""Where a bubblewrap sandbox's /dev/shm is mounted in its working directory (so that one
lazy unmount of the working directory takes both)."""

_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(path: str, size: int) -> int:
    """Mount a tmpfs of `size` bytes and TMP_QUOTA_FILES inodes on `path` (mode 0700); 0, or
    the errno."""
    opts = f"size={size},nr_inodes={TMP_QUOTA_FILES},mode=0700".encode()
    rc = _libc().mount(b"pkb_sandbox", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts)
    return 0 if rc == 0 else ctypes.get_errno()


def mount_quota(workdir: str, size: int, shm: bool) -> int:
    """The quota's tmpfs on a sandbox's working directory and, with `shm` (bubblewrap), on
    its SHM_DIR (its /dev/shm); 0, or the errno (whatever was mounted is unmounted)."""
    err = mount_tmpfs(workdir, size)
    if not err and shm:
        os.mkdir(os.path.join(workdir, SHM_DIR), 0o700)
        err = mount_tmpfs(os.path.join(workdir, SHM_DIR), size)
        if err:
            detach_mounts(workdir)
    return err


def _mounts_under(path: str) -> list[str]:
    """Mount points at or under `path` in this mount namespace, deepest first."""
    try:  # a mount point of the host's may not be UTF-8
        lines = Path("/proc/self/mountinfo").read_bytes().decode(errors="surrogateescape").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            # mountinfo writes space, tab, newline and backslash as \ooo
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            if point == path or point.startswith(path.rstrip("/") + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def detach_mounts(path: str) -> None:
    """Lazily unmount every mount at or under `path` (a sandbox's tmpfs): its contents go
    with it, however deep or unreadable, and nothing of it is left to walk."""
    libc = None
    for point in _mounts_under(os.path.realpath(path)):
        libc = libc or _libc()
        libc.umount2(point.encode(), _MNT_DETACH)


def _denied(cache_dirs: list[str]) -> list[Path]:
    out = [Path.home().resolve(), Path.cwd().resolve()]
    out += [Path(d).expanduser().resolve() for d in cache_dirs if d]
    return out


def _may_bind(path: Path, denied: list[Path]) -> bool:
    """A path may be shown to a worker if it is none of the denied ones, holds none of them,
    and lies in none of them (except the home directory: Python installs live under it)."""
    for d in denied:
        if path == d or d.is_relative_to(path):
            return False
        if path.is_relative_to(d) and d != Path.home().resolve():
            return False
    return True


# The programs a torch extension build calls. Binding only their prefixes, not every PATH
# entry's, keeps tool-less PATH entries in home directories (~/.cargo/bin) out of the sandbox.
_BUILD_TOOLS = ("cc", "c++", "gcc", "g++", "nvcc", "ninja", "ld", "as")


def _tool_prefixes() -> list[str]:
    """Install prefixes of the tools a build calls (/opt/gcc for /opt/gcc/bin/gcc) and where
    CC, CXX and CUDA_HOME point. On the H200 image the host compiler lives in /opt/gcc:
    without it nvcc fails with "Failed to preprocess host compiler properties" inside the
    sandbox."""
    out = []
    found = [shutil.which(t) for t in _BUILD_TOOLS]
    for var in ("CC", "CXX"):
        v = os.environ.get(var, "")
        found.append(shutil.which(v) if v else None)
    for tool in filter(None, found):
        real = os.path.realpath(tool)
        if os.path.basename(os.path.dirname(real)) == "bin":
            out.append(os.path.dirname(os.path.dirname(real)))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        v = os.environ.get(var, "")
        if v.startswith("/"):
            out.append(os.path.realpath(v))
    return out


def import_paths(cache_dirs: list[str]) -> list[str]:
    """The directories a worker's Python and a build's tools need, minus anything that could
    show harness data."""
    denied = _denied(cache_dirs)
    pkg_parent = Path(pkb_ray.__file__).resolve().parent.parent
    paths = []
    for p in [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path, *_tool_prefixes()]:
        if not p:
            continue
        rp = Path(p).resolve()
        if not rp.is_dir() or rp == pkg_parent or str(rp) in paths or str(rp) == "/":
            continue
        if _may_bind(rp, denied):
            paths.append(str(rp))
    return sorted(set(paths), key=len)


def bwrap_args(bwrap: str, workdir: str, gpus: GpuView | None, ro_paths: list[str],
               binds: dict[str, str], package: str, sized_shm: bool) -> list[str]:
    """bubblewrap's arguments for one sandbox: `gpus` what it holds of the node's GPUs
    (gpus.view; None: none); `package` is the package's readable copy (roots.package_copy),
    shown at PKG_MOUNT; `sized_shm`: its /dev/shm is the sized tmpfs at workdir/SHM_DIR
    (mount_quota), else bubblewrap's own."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all",
            "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID)]
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # The private /tmp first: an import path under /tmp (a packed site) is bound inside it.
    args += ["--bind", workdir, "/tmp"]
    for p in ro_paths:
        if not any(p == d or p.startswith(d + "/") for d in _SYSTEM_DIRS):
            args += ["--ro-bind", p, p]
    args += ["--ro-bind", os.path.join(package, "pkb_ray"), f"{PKG_MOUNT}/pkb_ray"]
    for dst, src in sorted(binds.items()):  # after the trees they lie in: they cover a file
        args += ["--ro-bind", src, dst]
    args += ["--dev", "/dev"]
    if sized_shm:  # a tmpfs of the host's, bounded in bytes and files (bwrap's --size has no files)
        args += ["--bind", os.path.join(workdir, SHM_DIR), "/dev/shm"]
    else:
        args += ["--tmpfs", "/dev/shm"]
    args += ["--proc", "/proc", "--ro-bind-try", "/sys", "/sys"]
    if gpus is not None:
        for node in gpus.device_nodes:
            args += ["--dev-bind", node, node]
        if gpus.proc_entries is not None:  # an empty read-only directory, its own GPUs' entries bound in
            args += ["--tmpfs", PROC_GPUS]
            for bus in gpus.proc_entries:
                args += ["--ro-bind", f"{PROC_GPUS}/{bus}", f"{PROC_GPUS}/{bus}"]
            args += ["--remount-ro", PROC_GPUS]
        for d in gpus.sysfs_masks:
            args += ["--tmpfs", d, "--remount-ro", d]
    # bwrap's own / and /dev are tmpfs of half the node's memory, writable by the sandbox's
    # user (writable, a sandbox could fill /dev or create /x): read-only, so that /tmp and
    # /dev/shm (sized above) are all it may write.
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]
    return args
