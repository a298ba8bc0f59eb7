"""What sandbox this machine allows: the plan every sandbox of a process is started from.

Kinds, strongest first (`eval.sandbox.mode=auto` takes the strongest this machine allows,
and says which in every result's `sandbox` field, never silently):
  bwrap+uid  bubblewrap, run as a dedicated unprivileged user (default `pkb-sandbox`; made
             by scripts/install.sh when it runs as root)
  bwrap      bubblewrap as the evaluator's own user (its files keep their owner checks)
  uid        no bubblewrap: the dedicated user alone (sees what that user may read)
  none       the evaluator's user in fresh processes (no confinement: said in every result)
A plan is found by running the real thing once (plan_sandbox's probe). Without root there is
no write quota, and the plan's description says so.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from pkb_ray.engine.launch.mounts import SHM_DIR, TMP_QUOTA_FILES, bwrap_args, import_paths, mount_quota, mount_tmpfs
from pkb_ray.engine.launch.roots import package_copy, remove_tree, run_root

KINDS = ("bwrap+uid", "bwrap", "uid", "none")
DEFAULT_USER = "pkb-sandbox"


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
        return 0 if mount_tmpfs(probe, 1 << 20) else size
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
        if plan.tmp_quota and mount_quota(workdir, 16 << 20, shm=plan.kind.startswith("bwrap")):
            return "cannot mount a tmpfs for /tmp"
        os.chmod(workdir, 0o700)
        if plan.uid is not None:
            for d in (os.path.join(workdir, SHM_DIR), workdir):
                if os.path.isdir(d):
                    os.chown(d, plan.uid, plan.gid or plan.uid)
        py = [sys.executable, "-c", "import sys"]
        if plan.kind.startswith("bwrap"):
            cmd = bwrap_args(plan.bwrap or "bwrap", workdir, None, import_paths([]), {}, package_copy(),
                             sized_shm=bool(plan.tmp_quota)) + ["--"] + py
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

