"""A running sandbox: how one starts (its directory, its user, bubblewrap's argv) and how it
is stopped, read and removed.

Without bubblewrap a sandbox has no pid namespace: what escaped its process group is found
by the PKB_SANDBOX_ID every process of it inherits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pkb_ray.engine.launch.bounds import Bounds, SandboxBounds, bound, sandbox_bounds
from pkb_ray.engine.launch.files import copy_regular_tree, read_sandbox_file
from pkb_ray.engine.launch.gpus import view
from pkb_ray.engine.launch.mounts import PKG_MOUNT, bwrap_args, import_paths, mount_quota
from pkb_ray.engine.launch.plan import SandboxError, SandboxPlan
from pkb_ray.engine.launch.roots import live, package_copy, remove_tree, run_root


class SandboxProcess:
    """One sandbox: its process (group), its working directory, its logs."""

    def __init__(self, plan: SandboxPlan, popen: subprocess.Popen, workdir: str, inside_dir: str,
                 sandbox_id: str, bounds: SandboxBounds) -> None:
        self.plan, self.popen, self.workdir, self.inside_dir, self.id = plan, popen, workdir, inside_dir, sandbox_id
        self.bounds = bounds
        self.gpus_text = ""
        """What it holds of the node's GPUs, in words (empty: no GPU)."""
        self.ready = False
        self.started_at = time.monotonic()
        self.cores: tuple[int, ...] = ()
        """Where it started and where its clean-up runs (start_sandbox's `cores`)."""

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
        self.bounds.kill()  # its group holds whatever left the process group or the namespace
        if self.plan.kind in ("uid", "none") and self.bounds.group is None:
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
        """Stop it, reap it, then remove its group and its directory: nothing is left."""
        self.kill()
        self.bounds.remove()
        remove_tree(self.workdir)

    def cleanup_later(self) -> None:
        """Stopped now; reaped and removed in the background (a dying CUDA process takes a
        few hundred milliseconds to give its context back, which no evaluation should wait on),
        on its cores: the removal's chmod and rm, left to the scheduler, may run on a core
        another GPU group's judge or worker is pinned to and timing on."""
        self.kill(wait=False)
        threading.Thread(target=self._cleanup_on_cores, name=f"pkb-cleanup-{self.id}", daemon=True).start()

    def _cleanup_on_cores(self) -> None:
        _keep_to(self.cores)  # this thread, and what it starts
        self.cleanup()


def _keep_to(cores: tuple[int, ...]) -> None:
    """The calling thread (and the processes it starts) on `cores`; left as it is where they
    may not be used."""
    if cores:
        try:
            os.sched_setaffinity(0, cores)
        except OSError:
            pass


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


def copy_tree_in(src: str, dst: str, plan: SandboxPlan) -> None:
    """A candidate's prebuilt extensions, copied into a sandbox's directory with their times
    (torch's build sees them up to date and loads them: 0.1 s instead of a 48 s compile,
    docs/design.md), owned by the sandbox's user."""
    copy_regular_tree(src, dst, (plan.uid, plan.gid or plan.uid) if plan.uid is not None else None)


def start_sandbox(plan: SandboxPlan, command: list[str], *, env: dict[str, str], pass_fds: list[int],
                  gpu: bool, cache_dirs: list[str], pre_files: dict[str, str] | None = None,
                  dirs: list[str] = (), binds: dict[str, str] | None = None,
                  trees: dict[str, str] | None = None, limits: Bounds | None = None,
                  gpus: tuple[int, ...] | None = None, cores: tuple[int, ...] = ()) -> SandboxProcess:
    """Start `command` (a Python module invocation, spawn.py's; its first element is
    replaced by the interpreter, the rest passed as they are) in a new sandbox. `env` holds
    allow-listed names only (spawn.child_env); paths in `env` that name the sandbox's
    working directory use the placeholder {TMP}. `pre_files`, `dirs` and `trees` (name ->
    a directory of the node's, copied with copy_tree_in) are made in that directory first.
    `binds` shows a file of the node's in place of another (the NCCL stub over libnccl);
    without bubblewrap they are preloaded instead (LD_PRELOAD: weaker, a path dlopen still
    works). `limits`: what it may use (bounds.py; default: one rank's). `gpus`, with
    `gpu`: the node's GPUs it holds (gpus.py; None: every one); under bubblewrap it sees
    no other. `cores`: where its first process starts, before bubblewrap (and so bwrap
    itself, the interpreter's start-up and the imports; a rank moves to its own core
    later), and where its clean-up runs; (): wherever the scheduler puts them."""
    bwrapped = plan.kind.startswith("bwrap")
    workdir = tempfile.mkdtemp(prefix="pkb_sbx_", dir=run_root())
    if plan.tmp_quota:
        err = mount_quota(workdir, plan.tmp_quota, shm=bwrapped)
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
    inside = "/tmp" if bwrapped else workdir
    full_env = {k: v.replace("{TMP}", inside) for k, v in env.items()}
    full_env.update(HOME=inside, TMPDIR=inside, PKB_WORKDIR=inside, PKB_SANDBOX_ID=sandbox_id,
                    PYTHONDONTWRITEBYTECODE="1")
    ro = import_paths(cache_dirs)
    shown = view(gpus) if gpu else None
    if bwrapped:
        full_env["PYTHONPATH"] = os.pathsep.join([PKG_MOUNT] + [p for p in ro if p not in (sys.prefix, sys.base_prefix)])
        argv = bwrap_args(plan.bwrap or "bwrap", workdir, shown, ro, binds or {},
                          package_copy(), sized_shm=bool(plan.tmp_quota)) + ["--", sys.executable] + command[1:]
        if shown is not None and shown.inside_cvd is not None:
            full_env["CUDA_VISIBLE_DEVICES"] = shown.inside_cvd
    else:
        full_env["PYTHONPATH"] = os.pathsep.join([package_copy()] + ro)
        if binds:
            full_env["LD_PRELOAD"] = " ".join(sorted(set(binds.values())))
        argv = [sys.executable] + command[1:]
    # The other GPUs' minors refused by its group too, where bubblewrap already hides their
    # files: without it they stay visible, and a refused open could renumber what CUDA counts.
    deny = list(shown.deny_rules) if shown is not None and bwrapped else []
    held = bound(sandbox_id, limits or sandbox_bounds(1), uid=plan.uid, device="cuda" if gpu else "cpu",
                 deny_devices=deny)
    err = open(os.path.join(workdir, "zygote.log"), "ab")
    bounded = held.preexec(plan.uid, plan.gid)

    def first_process() -> None:
        _keep_to(tuple(cores))
        bounded()

    try:
        popen = subprocess.Popen(argv, env=full_env, pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=err, cwd=workdir, start_new_session=True,
                                 close_fds=True, preexec_fn=first_process)
    except BaseException:
        held.remove()
        raise
    finally:
        err.close()
    proc = SandboxProcess(plan, popen, workdir, inside, sandbox_id, held)
    proc.cores = tuple(cores)
    if shown is not None:
        proc.gpus_text = shown.description if bwrapped else "gpus: every GPU of the node reachable (no bubblewrap)"
    live.add(proc)
    return proc
