"""Where candidate code runs: one sandbox per candidate, all its ranks inside, judges outside.

Kinds, strongest first (`eval.sandbox.mode=auto` takes the strongest this machine allows,
and says which in every result's `sandbox` field, never silently):
  bwrap+uid  bubblewrap, run as a dedicated unprivileged user (default `pkb-sandbox`; made
             by scripts/install.sh when it runs as root)
  bwrap      bubblewrap as the evaluator's own user (its files keep their owner checks)
  uid        no bubblewrap: the dedicated user alone (sees what that user may read)
  none       the evaluator's user in fresh processes (no confinement: said in every result)
Under bubblewrap a worker sees: the system's libraries and Python (read-only), the package's
own code (read-only, at /opt/pkb), a private writable /tmp shared by the candidate's ranks,
the GPU device files, and a network namespace of its own (loopback only). It does not see
the caches, kernels_cache/, sweeps/, the tracking store, the checkout or any home directory.
Measured on the H200 nodes (docs/design.md): CUDA and 2-rank symmetric memory work inside, also
as an unprivileged user with --unshare-user.

What a sandbox may write is bounded where the evaluator runs as root: its working directory
(the worker's /tmp) is a tmpfs of TMP_QUOTA_BYTES and TMP_QUOTA_FILES mounted on the host, and
under bubblewrap its /dev/shm is another such (mounted inside the first, as .shm, and bound
there). A write past either fails (ENOSPC) in the candidate's process;
removing the sandbox is one lazy unmount, whatever tree it left. Without root there is no
quota, and every result's `sandbox` field says so.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import glob
import hashlib
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pkb_ray

KINDS = ("bwrap+uid", "bwrap", "uid", "none")
DEFAULT_USER = "pkb-sandbox"
INSIDE_UID = 1000
PKG_MOUNT = "/opt/pkb"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd", "group", "hosts",
        "localtime", "alternatives", "os-release", "ssl", "ca-certificates", "host.conf", "gai.conf")


class SandboxError(RuntimeError):
    """The sandbox asked for cannot be had on this machine."""


@dataclass(frozen=True)
class SandboxPlan:
    kind: str
    bwrap: str | None = None
    uid: int | None = None
    gid: int | None = None
    user: str = ""
    note: str = ""
    """What is missing for a stronger kind (empty for bwrap+uid)."""
    tmp_quota: int = 0
    """Bytes a sandbox may write in its /tmp (and, under bubblewrap, its /dev/shm); 0: no quota."""

    @property
    def description(self) -> str:
        name = f"{self.kind}({self.user})" if self.uid is not None else self.kind
        text = f"{name}: {self.note}" if self.note else name
        if not self.tmp_quota:
            return text + "; writes: no quota (mounting a tmpfs needs root)"
        where = "/tmp and /dev/shm" if self.kind.startswith("bwrap") else "/tmp (/dev/shm is the host's)"
        return text + f"; writes: {where} {self.tmp_quota >> 20} MiB and {TMP_QUOTA_FILES} files each"


TMP_QUOTA_BYTES = 2 << 30
"""A sandbox's /tmp (and /dev/shm): the size of a tree the harness copies out of one
(MAX_TREE_BYTES; a CUDA extension's build is tens of MB). tmpfs takes memory only for what is
written. `PKB_SANDBOX_TMP_QUOTA_MB` sets another size (tests use a small one)."""

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


def _mount_tmpfs(path: str, size: int) -> int:
    """Mount a tmpfs of `size` bytes and TMP_QUOTA_FILES inodes on `path` (mode 0700); 0, or
    the errno."""
    opts = f"size={size},nr_inodes={TMP_QUOTA_FILES},mode=0700".encode()
    rc = _libc().mount(b"pkb_sandbox", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts)
    return 0 if rc == 0 else ctypes.get_errno()


def _mount_quota(workdir: str, plan: "SandboxPlan", size: int) -> int:
    """The quota's tmpfs on a sandbox's working directory and, under bubblewrap, on its
    SHM_DIR (its /dev/shm); 0, or the errno (whatever was mounted is unmounted)."""
    err = _mount_tmpfs(workdir, size)
    if not err and plan.kind.startswith("bwrap"):
        os.mkdir(os.path.join(workdir, SHM_DIR), 0o700)
        err = _mount_tmpfs(os.path.join(workdir, SHM_DIR), size)
        if err:
            _detach_mounts(workdir)
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


def _detach_mounts(path: str) -> None:
    """Lazily unmount every mount at or under `path` (a sandbox's tmpfs): its contents go
    with it, however deep or unreadable, and nothing of it is left to walk."""
    libc = None
    for point in _mounts_under(os.path.realpath(path)):
        libc = libc or _libc()
        libc.umount2(point.encode(), _MNT_DETACH)


def _tmp_quota() -> int:
    """The quota this machine can give (root mounting a tmpfs), else 0."""
    size = TMP_QUOTA_BYTES
    env = os.environ.get("PKB_SANDBOX_TMP_QUOTA_MB", "")
    if env:
        try:
            size = int(env) << 20
        except ValueError:
            raise SandboxError(f"PKB_SANDBOX_TMP_QUOTA_MB must be a whole number of MiB, got {env!r}") from None
        if size <= 0:
            raise SandboxError(f"PKB_SANDBOX_TMP_QUOTA_MB must be positive, got {env!r}")
    if os.geteuid() != 0:
        return 0
    probe = tempfile.mkdtemp(prefix="pkb_quota_probe_", dir=run_root())
    try:
        return 0 if _mount_tmpfs(probe, 1 << 20) else size
    finally:
        remove_tree(probe)  # unmounts it first


def _find_bwrap(path: str | None) -> str | None:
    for cand in (path, os.environ.get("PKB_BWRAP"), shutil.which("bwrap")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def _user(name: str) -> tuple[int, int] | None:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def _probe(plan: "SandboxPlan") -> str:
    """'' when a sandbox of this plan can start this Python here, else why not (the first
    lines of what it said). Runs the real thing: the binds and the user of a worker."""
    workdir = tempfile.mkdtemp(prefix="pkb_probe_", dir=run_root())
    try:
        if plan.tmp_quota and _mount_quota(workdir, plan, 16 << 20):
            return "cannot mount a tmpfs for /tmp"
        os.chmod(workdir, 0o700)
        if plan.uid is not None:
            for d in (os.path.join(workdir, SHM_DIR), workdir):
                if os.path.isdir(d):
                    os.chown(d, plan.uid, plan.gid or plan.uid)
        py = [sys.executable, "-c", "import sys"]
        if plan.kind.startswith("bwrap"):
            cmd = _bwrap_args(plan, workdir, [], import_paths([]), {}) + ["--"] + py
        else:
            cmd = py
        kw = {"user": plan.uid, "group": plan.gid, "extra_groups": []} if plan.uid is not None else {}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=workdir, **kw)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)[:300]
    finally:
        remove_tree(workdir)
    return "" if p.returncode == 0 else (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[0][:300]


@functools.lru_cache(maxsize=8)
def plan_sandbox(mode: str = "auto", user: str = DEFAULT_USER, bwrap_path: str | None = None) -> SandboxPlan:
    """The sandbox this machine allows for `mode` (auto = the strongest). Raises SandboxError
    when an explicit mode cannot be had, naming what is missing."""
    if mode not in ("auto",) + KINDS:
        raise SandboxError(f"eval.sandbox.mode must be one of auto, {', '.join(KINDS)}; got {mode!r}")
    notes = []
    bwrap = _find_bwrap(bwrap_path)
    ids = _user(user) if os.geteuid() == 0 else None
    if ids is None:
        notes.append(f"no user {user}" + ("" if os.geteuid() == 0 else " (needs root to switch)")
                     + " (scripts/install.sh makes it when run as root)")
    why_bwrap = "no bwrap on PATH (install bubblewrap)" if bwrap is None else ""
    quota = _tmp_quota()
    if bwrap and ids and mode in ("auto", "bwrap+uid"):
        plan = SandboxPlan("bwrap+uid", bwrap, ids[0], ids[1], user, tmp_quota=quota)
        err = _probe(plan)
        if not err:
            return plan
        notes.append(f"bwrap as {user} fails: {err}")
    if bwrap and mode in ("auto", "bwrap"):
        err = _probe(SandboxPlan("bwrap", bwrap, tmp_quota=quota))
        if not err:
            return SandboxPlan("bwrap", bwrap, note="; ".join(notes), tmp_quota=quota)
        why_bwrap = f"bwrap fails here: {err}"
    if why_bwrap:
        notes.append(why_bwrap)
    if ids and mode in ("auto", "uid"):
        plan = SandboxPlan("uid", None, ids[0], ids[1], user, tmp_quota=quota)
        err = _probe(plan)
        if not err:
            return SandboxPlan("uid", None, ids[0], ids[1], user, note="; ".join(notes), tmp_quota=quota)
        notes.append(f"running as {user} fails: {err}")
    if mode in ("auto", "none"):
        return SandboxPlan("none", note="; ".join(notes) or "asked for", tmp_quota=quota)
    raise SandboxError(f"sandbox {mode!r} is not available here: {'; '.join(notes)}")


# --------------------------------------------------------------------------- what a worker may see

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


def _bwrap_args(plan: SandboxPlan, workdir: str, device_nodes: list[str], ro_paths: list[str],
                binds: dict[str, str]) -> list[str]:
    args = [plan.bwrap or "bwrap", "--die-with-parent", "--new-session", "--unshare-all",
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
    args += ["--ro-bind", os.path.join(package_copy(), "pkb_ray"), f"{PKG_MOUNT}/pkb_ray"]
    for dst, src in sorted(binds.items()):  # after the trees they lie in: they cover a file
        args += ["--ro-bind", src, dst]
    args += ["--dev", "/dev"]
    if plan.tmp_quota:  # a tmpfs of the host's, bounded in bytes and files (bwrap's --size has no files)
        args += ["--bind", os.path.join(workdir, SHM_DIR), "/dev/shm"]
    else:
        args += ["--tmpfs", "/dev/shm"]
    args += ["--proc", "/proc", "--ro-bind-try", "/sys", "/sys"]
    for node in device_nodes:
        args += ["--dev-bind", node, node]
    # bwrap's own / and /dev are tmpfs of half the node's memory, writable by the sandbox's
    # user: read-only, so that /tmp and /dev/shm (sized above) are all it may write (an
    # adversarial review wrote 5 MB into /dev and created /x).
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]
    return args


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


# --------------------------------------------------------------------------- what is left behind

RUN_ROOT_PREFIX = "pkb_run_"
"""Every directory a process makes for sandboxes (their working directories, the package's
code copy, the NCCL stub) lies in one run root under TMPDIR, pkb_run_<pid>_<pid ns>_*, removed when
the process exits (also on an error, or on SIGTERM where the entry point turns it into an
exit). Before, each `pkb eval` left its prewarmed sandbox and a code copy behind (58
directories found on one machine after a day). A root whose process is gone (SIGKILL) is
removed by the next process that makes one."""
_live: "weakref.WeakSet[SandboxProcess]" = weakref.WeakSet()
_root: tuple[int, str] | None = None
_root_lock = threading.Lock()


def run_root() -> str:
    """This process's run root (made on first use; a forked child makes its own)."""
    global _root
    with _root_lock:
        if _root is None or _root[0] != os.getpid():
            _remove_stale_roots()
            path = tempfile.mkdtemp(prefix=f"{RUN_ROOT_PREFIX}{os.getpid()}_{_pid_namespace()}_")
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


def close_run_root_if_idle() -> None:
    """close_run_root() unless a sandbox of this process still runs (a node's prewarmed one):
    for processes that start sandboxes now and then (a Ray worker that prebuilds), which Ray
    may end without their exit handlers."""
    if not any(p.alive() for p in list(_live)):
        close_run_root()


def _remove_run_root(pid: int, path: str) -> None:
    if os.getpid() != pid:  # a forked child exits: the root is its parent's
        return
    for proc in list(_live):
        proc.kill(wait=False)
    remove_tree(path)


def _pid_namespace() -> int:
    """Our pid namespace's inode: a pid means something only in its own namespace (two
    containers may share a TMPDIR; one must not take the other's live root for dead)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _remove_stale_roots() -> None:
    base = tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if not name.startswith(RUN_ROOT_PREFIX):
            continue
        try:
            pid_text, ns_text, _ = name[len(RUN_ROOT_PREFIX):].split("_", 2)
            pid, ns = int(pid_text), int(ns_text)
            st = os.lstat(os.path.join(base, name))
        except (ValueError, OSError):
            continue
        if ns != _pid_namespace():
            continue
        if st.st_uid != os.getuid() or not stat.S_ISDIR(st.st_mode):
            continue
        try:
            os.kill(pid, 0)
            continue  # its process lives
        except ProcessLookupError:
            remove_tree(os.path.join(base, name))
        except PermissionError:
            continue


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
    _detach_mounts(path)
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        subprocess.run(["chmod", "-R", "u+rwX", "--", path], check=False, **quiet)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", path], check=False, **quiet)
    except OSError:
        pass
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def gpu_device_nodes() -> list[str]:
    return sorted(p for p in glob.glob("/dev/nvidia*") if os.path.exists(p))


# --------------------------------------------------------------------------- a running sandbox

class SandboxProcess:
    """One sandbox: its process (group), its working directory, its logs."""

    def __init__(self, plan: SandboxPlan, popen: subprocess.Popen, workdir: str, inside_dir: str,
                 sandbox_id: str) -> None:
        self.plan, self.popen, self.workdir, self.inside_dir, self.id = plan, popen, workdir, inside_dir, sandbox_id
        self.ready = False
        self.started_at = time.monotonic()

    def wait_ready(self, timeout_s: float) -> bool:
        """True once the zygote has imported torch (it prints "ready")."""
        if self.ready:
            return True
        import select
        out = self.popen.stdout
        assert out is not None
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.popen.poll() is not None:
                return False
            if select.select([out], [], [], max(0.0, end - time.monotonic()))[0]:
                line = out.readline(64)
                if line.strip() == b"ready":
                    self.ready = True
                    return True
                if not line:
                    return False
        return False

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, wait: bool = True) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.plan.kind in ("uid", "none"):
            _kill_tagged(self.id)  # no pid namespace: find what escaped the process group
        if wait:
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                pass
            if self.popen.stdout:
                self.popen.stdout.close()

    def log_tail(self, name: str, chars: int = 6000) -> str:
        data = read_sandbox_file(self.workdir, name, 4 * chars, tail=True)  # a candidate may print gigabytes
        return data.decode(errors="replace")[-chars:]

    def read_file(self, name: str, max_bytes: int) -> bytes:
        """The first max_bytes of a file the sandbox wrote (read_sandbox_file's rules)."""
        return read_sandbox_file(self.workdir, name, max_bytes)

    def cleanup(self) -> None:
        self.kill()
        remove_tree(self.workdir)

    def cleanup_later(self) -> None:
        """Stopped now; reaped and removed in the background (a dying CUDA process takes a
        few hundred milliseconds to give its context back, which no evaluation should wait on)."""
        self.kill(wait=False)
        threading.Thread(target=self.cleanup, name=f"pkb-cleanup-{self.id}", daemon=True).start()


def _kill_tagged(sandbox_id: str) -> None:
    tag = f"PKB_SANDBOX_ID={sandbox_id}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if tag in (d / "environ").read_bytes().split(b"\0"):
                os.kill(int(d.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue


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


def copy_tree_in(src: str, dst: str, plan: SandboxPlan) -> None:
    """A candidate's prebuilt extensions, copied into a sandbox's directory with their times
    (torch's build sees them up to date and loads them: 0.1 s instead of a 48 s compile,
    docs/design.md), owned by the sandbox's user."""
    copy_regular_tree(src, dst, (plan.uid, plan.gid or plan.uid) if plan.uid is not None else None)


def start(plan: SandboxPlan, command: list[str], *, env: dict[str, str], pass_fds: list[int],
          gpu: bool, cache_dirs: list[str], pre_files: dict[str, str] | None = None,
          dirs: list[str] = (), binds: dict[str, str] | None = None,
          trees: dict[str, str] | None = None) -> SandboxProcess:
    """Start `command` (a Python module invocation, engine/spawn.py's; its first element is
    replaced by the interpreter, the rest passed as they are) in a new sandbox. `env` holds
    allow-listed names only (spawn.child_env); paths in `env` that name the sandbox's
    working directory use the placeholder {TMP}. `pre_files`, `dirs` and `trees` (name ->
    a directory of the node's, copied with copy_tree_in) are made in that directory first. `binds` shows a file of the
    node's in place of another (the NCCL stub over libnccl); without bubblewrap they are
    preloaded instead (LD_PRELOAD: weaker, a path dlopen still works)."""
    workdir = tempfile.mkdtemp(prefix="pkb_sbx_", dir=run_root())
    if plan.tmp_quota:
        err = _mount_quota(workdir, plan, plan.tmp_quota)
        if err:
            remove_tree(workdir)
            raise SandboxError(f"cannot mount the sandbox's /tmp quota on {workdir}: {os.strerror(err)}")
    os.chmod(workdir, 0o700)
    for name, text in (pre_files or {}).items():
        Path(workdir, name).write_text(text)
    for name in dirs:
        Path(workdir, name).mkdir(exist_ok=True)
    for name, src in (trees or {}).items():
        copy_tree_in(src, os.path.join(workdir, name), plan)
    if plan.uid is not None:
        # Bottom up, the directory itself last: until then it is root's (0700), so no process
        # of the sandbox's user left from an earlier candidate can swap an entry for a link
        # while it is chowned (and none is followed).
        for root, ds, fs in os.walk(workdir, topdown=False):
            for n in [os.path.join(root, x) for x in ds + fs] + [root]:
                os.chown(n, plan.uid, plan.gid or plan.uid, follow_symlinks=False)
    sandbox_id = os.path.basename(workdir)
    bwrapped = plan.kind.startswith("bwrap")
    inside = "/tmp" if bwrapped else workdir
    full_env = {k: v.replace("{TMP}", inside) for k, v in env.items()}
    full_env.update(HOME=inside, TMPDIR=inside, PKB_WORKDIR=inside, PKB_SANDBOX_ID=sandbox_id,
                    PYTHONDONTWRITEBYTECODE="1")
    ro = import_paths(cache_dirs)
    if bwrapped:
        full_env["PYTHONPATH"] = os.pathsep.join([PKG_MOUNT] + [p for p in ro if p not in (sys.prefix, sys.base_prefix)])
        argv = _bwrap_args(plan, workdir, gpu_device_nodes() if gpu else [], ro, binds or {}) + \
            ["--", sys.executable] + command[1:]
    else:
        full_env["PYTHONPATH"] = os.pathsep.join([package_copy()] + ro)
        if binds:
            full_env["LD_PRELOAD"] = " ".join(sorted(set(binds.values())))
        argv = [sys.executable] + command[1:]
    kw = {"user": plan.uid, "group": plan.gid, "extra_groups": []} if plan.uid is not None else {}
    err = open(os.path.join(workdir, "zygote.log"), "ab")
    try:
        popen = subprocess.Popen(argv, env=full_env, pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=err, cwd=workdir, start_new_session=True,
                                 close_fds=True, **kw)
    finally:
        err.close()
    proc = SandboxProcess(plan, popen, workdir, inside, sandbox_id)
    _live.add(proc)
    return proc
