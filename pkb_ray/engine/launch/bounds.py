"""What a sandbox may use, and how that is held: a control group per sandbox where the
evaluator may make one, per-process resource limits where it may not.

Sizes come from the problem and the node (sandbox_bounds):
  processes  PIDS_PER_RANK + PIDS_PER_CORE x cores per rank, plus PIDS_SANDBOX, counted as
             the kernel counts them (threads too: torch starts a pool of one per core)
  memory     MEMORY_FLOOR + per rank the larger of MEMORY_RANK_FLOOR and
             MEMORY_PER_FOOTPRINT x the bytes a call touches, capped at NODE_MEMORY_SHARE of
             the node's memory over its GPU groups; swap off
A sandbox's group (engine/cgroup.py) counts every process it makes whatever its parent or
pid, and its first process joins it before it runs anything (preexec, still as root, then
it drops to the sandbox's user). Without a group, RLIMIT_NPROC (which counts every process
of the sandbox's user, on the whole machine, and never holds for root) and, on cpu,
RLIMIT_AS per process (CUDA reserves more address space than any bound would allow). The
result's `sandbox` field names what held.
"""

from __future__ import annotations

import atexit
import os
import re
import resource
import secrets
import threading
from dataclasses import dataclass
from typing import Callable

from pkb_ray.engine import cgroup
from pkb_ray.engine.cgroup import CgroupError, Group
from pkb_ray.engine.launch import owners

PIDS_SANDBOX = 64
"""bwrap, the zygote and what the harness starts beside the ranks."""
PIDS_PER_RANK = 256
"""A rank's own threads (gloo, CUDA, the guard) and a build's (ninja, nvcc, cicc, ptxas)."""
PIDS_PER_CORE = 2
"""Per rank and core: torch's intra-op and inter-op pools (one thread per core each)."""
MEMORY_FLOOR = 4 << 30
"""A sandbox's own: a CUDA extension's build (1-2 GiB for nvcc on torch's headers) and
what its /tmp and /dev/shm hold (tmpfs pages count against the group)."""
MEMORY_RANK_FLOOR = 2 << 30
"""Per rank: torch imported with its CUDA context (the zygote's pages are shared)."""
MEMORY_PER_FOOTPRINT = 8
"""Per rank, this many times the bytes one call reads and writes: inputs, outputs, the
arena's slots and the candidate's own buffers."""
NODE_MEMORY_SHARE = 0.75
"""Of the node's memory, split among its GPU groups: what the judges and the node keep."""
RUN_GROUP_PREFIX = "pkb_run_"


@dataclass(frozen=True)
class Bounds:
    ranks: int
    pids: int
    """Tasks (processes and threads) the whole sandbox may hold."""
    memory_bytes: int


def node_memory_bytes() -> int:
    """This machine's memory, or the bound of the group this process runs in if lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    where = cgroup.membership()
    for mount in cgroup.mounts():
        if mount.version == 2 or "memory" in mount.controllers:
            path = where.get("v2" if mount.version == 2 else "memory")
            d = mount.host_dir(path) if path else None
            for name in ("memory.max", "memory.limit_in_bytes"):
                try:
                    text = cgroup.read(os.path.join(d, name)).strip() if d else ""
                except CgroupError:
                    continue
                if text.isdigit():
                    total = min(total, int(text))
    return total


def sandbox_bounds(ranks: int, footprint_bytes: int = 0, groups: int = 1) -> Bounds:
    """The bounds of a sandbox of `ranks` ranks whose calls touch `footprint_bytes` per rank,
    on a node split into `groups` GPU groups. PKB_SANDBOX_PIDS and PKB_SANDBOX_MEMORY_MB set
    other sizes (tests use small ones)."""
    cores = os.cpu_count() or 1
    pids = PIDS_SANDBOX + ranks * (PIDS_PER_RANK + PIDS_PER_CORE * cores)
    per_rank = max(MEMORY_RANK_FLOOR, MEMORY_PER_FOOTPRINT * max(0, int(footprint_bytes)))
    cap = int(NODE_MEMORY_SHARE * node_memory_bytes() / max(1, groups))
    memory = min(MEMORY_FLOOR + ranks * per_rank, cap)
    pids = _env_int("PKB_SANDBOX_PIDS", pids, 1)
    memory = _env_int("PKB_SANDBOX_MEMORY_MB", memory, 1 << 20)
    return Bounds(ranks, pids, memory)


def node_groups(device: str, world_size: int) -> int:
    """How many GPU groups of `world_size` this node holds (1 on cpu): the GPUs this
    process may use (CUDA_VISIBLE_DEVICES, else every /dev/nvidiaN)."""
    if device != "cuda":
        return 1
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = len([d for d in cvd.split(",") if d.strip()]) if cvd is not None else \
        len([n for n in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", n)])
    return max(1, gpus // max(1, world_size))


def _env_int(name: str, default: int, unit: int) -> int:
    text = os.environ.get(name, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {text!r}")
    return value * unit


# --------------------------------------------------------------------------- this process's groups

@dataclass
class _RunGroup:
    """This process's parent of every sandbox's group, one directory per hierarchy (made on
    first use, removed at exit; a process killed without its exit handlers leaves one that
    the next process removes)."""
    group: Group
    missing: dict[str, str]
    """feature -> why no group holds it here."""


_run: tuple[int, _RunGroup] | None = None
_run_lock = threading.Lock()


def _v2_parent(mount: cgroup.Mount, own: str) -> tuple[str | None, bool]:
    """(where this process's v2 groups go, whether pids and memory are theirs). Pids and
    memory need a parent that enables them for its children and holds no process itself:
    the hierarchy's root, a parent named by PKB_CGROUP_PARENT, or the nearest ancestor of
    our own group that enables them already (systemd's slices do). Else our own group, for
    freezing and CPU accounting, which every group has."""
    here = mount.host_dir(own)
    if here is None:
        return None, False
    wanted = {"pids", "memory"}
    named = os.environ.get("PKB_CGROUP_PARENT", "")
    chain = ([named] if named else []) + [here]
    d = here
    while d.rstrip("/") != mount.path.rstrip("/") and d != "/":
        d = os.path.dirname(d)
        chain.append(d)
    for d in chain:
        try:
            enabled = set(cgroup.read(os.path.join(d, "cgroup.subtree_control")).split())
        except CgroupError:
            continue
        if wanted <= enabled and os.access(d, os.W_OK):
            return d, True
        is_root = d.rstrip("/") == mount.path.rstrip("/") and mount.root == "/"
        if is_root and os.access(d, os.W_OK):
            try:
                cgroup.write(os.path.join(d, "cgroup.subtree_control"), "+pids +memory\n")
                return d, True
            except CgroupError:
                pass
    return (here if os.access(here, os.W_OK) else None), False


def _make_run_group() -> _RunGroup:
    where = cgroup.membership()
    name = owners.stamp(RUN_GROUP_PREFIX) + secrets.token_hex(3)
    dirs: dict[str, tuple[int, str]] = {}
    missing: dict[str, str] = {}
    if os.geteuid() != 0:
        return _RunGroup(Group(), {f: "not root" for f in cgroup.FEATURES})
    found = cgroup.mounts()
    v2 = next((m for m in found if m.version == 2), None)
    v2_parent, v2_bounds = _v2_parent(v2, where.get("v2", "/")) if v2 is not None else (None, False)
    for feature in cgroup.FEATURES:
        v1 = next((m for m in found if m.version == 1 and cgroup.V1_CONTROLLER[feature] in m.controllers), None)
        parent = v1.host_dir(where.get(cgroup.V1_CONTROLLER[feature], "/")) if v1 is not None else None
        if parent is not None and os.access(parent, os.W_OK):
            dirs[feature] = (1, os.path.join(parent, name))
        elif v2_parent is not None and feature != "devices" and (v2_bounds or not cgroup.V2_CONTROLLER[feature]):
            dirs[feature] = (2, os.path.join(v2_parent, name))
        else:
            missing[feature] = ("devices: bind-mounts alone (cgroup v2 has no devices file)" if v2 is not None
                                and feature == "devices" else "no writable hierarchy has it")
    made: dict[str, tuple[int, str]] = {}
    for feature, (version, d) in dirs.items():
        _remove_stale(os.path.dirname(d))
        try:
            os.makedirs(d, exist_ok=True)
            made[feature] = (version, d)
        except OSError as e:
            missing[feature] = f"cannot make {d}: {e.strerror}"
    group = Group(made)
    for version, d in {(v, d) for v, d in made.values() if v == 2}:
        if v2_bounds:  # let the sandboxes' groups have pids and memory (this one holds no process)
            try:
                cgroup.write(os.path.join(d, "cgroup.subtree_control"), "+pids +memory\n")
            except CgroupError as e:
                for f in ("pids", "memory"):
                    made.pop(f, None)
                    missing[f] = str(e)
    atexit.register(_remove_run_group, os.getpid(), group)
    return _RunGroup(group, missing)


def run_group() -> _RunGroup:
    """This process's run group (made on first use; a forked child makes its own)."""
    global _run
    with _run_lock:
        if _run is None or _run[0] != os.getpid():
            _run = (os.getpid(), _make_run_group())
        return _run[1]


def close_run_group() -> None:
    """Remove this process's run group now (its sandboxes are gone); a later sandbox makes
    another."""
    global _run
    with _run_lock:
        if _run is not None and _run[0] == os.getpid():
            _remove_run_group(_run[0], _run[1].group)
        _run = None


def _remove_run_group(pid: int, group: Group) -> None:
    if os.getpid() == pid:
        group.remove(timeout_s=5.0)


def _remove_stale(parent: str) -> None:
    """Run groups of processes that are gone (same pid namespace), with whatever is in them."""
    for name in owners.orphans(parent, RUN_GROUP_PREFIX):
        Group({"stale": (0, os.path.join(parent, name))}).remove(timeout_s=2.0)


# --------------------------------------------------------------------------- one sandbox

class SandboxBounds:
    """One sandbox's bounds as held: its group (None without one) and the limits its first
    process sets before it becomes the sandbox's user."""

    def __init__(self, bounds: Bounds, group: Group | None, rlimits: list[tuple[int, int]],
                 missing: dict[str, str]) -> None:
        self.bounds, self.group, self.rlimits, self.missing = bounds, group, rlimits, missing

    @property
    def text(self) -> str:
        """The bounds in words (the result's `sandbox` field)."""
        return describe(self.bounds, self.group, self.rlimits, self.missing)

    def preexec(self, uid: int | None, gid: int | None) -> Callable[[], None]:
        """What the sandbox's first process runs between fork and exec: join the group, set
        the limits, then (as subprocess's user= would) become `uid`. In that order because
        only root may move a process into a group."""
        group, rlimits = self.group, self.rlimits

        def run() -> None:
            if group is not None:
                group.join(0)
            for res, value in rlimits:
                resource.setrlimit(res, (value, value))
            if uid is not None:
                os.setgroups([])
                os.setresgid(gid if gid is not None else uid, gid if gid is not None else uid,
                             gid if gid is not None else uid)
                os.setresuid(uid, uid, uid)
        return run

    def resize(self, b: Bounds) -> None:
        """The bounds for the candidate now given (sandboxes start before their problem is
        known). Limits set by rlimits keep the size they started with."""
        if self.group is None:
            return
        pids, memory = self.bounds.pids, self.bounds.memory_bytes
        try:
            if self.group.has("pids") and b.pids != pids:
                self.group.limit_pids(b.pids)
                pids = b.pids
            if self.group.has("memory") and b.memory_bytes != memory:
                self.group.limit_memory(b.memory_bytes)  # refused below what it holds: kept as it was
                memory = b.memory_bytes
        except CgroupError:
            pass
        self.bounds = Bounds(b.ranks, pids, memory)

    def hit(self) -> list[str]:
        return self.group.bounds_hit() if self.group is not None else []

    def kill(self) -> None:
        if self.group is not None:
            try:
                self.group.kill()
            except (CgroupError, OSError):
                pass

    def remove(self) -> bool:
        """Kill what is left in the group and remove it (after the sandbox is reaped)."""
        return self.group.remove() if self.group is not None else True


def _tasks_of(uid: int) -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts) that `uid` runs now."""
    n = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                n += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return n


def describe(b: Bounds, group: Group | None, rlimits: list[tuple[int, int]], missing: dict[str, str]) -> str:
    """The bounds in words for the result's `sandbox` field."""
    parts = []
    gib = f"{b.memory_bytes / (1 << 30):.1f} GiB"
    held = group.dirs if group is not None else {}
    if "pids" in held:
        parts.append(f"processes: pids.max {b.pids} (cgroup v{held['pids'][0]})")
    elif any(r == resource.RLIMIT_NPROC for r, _ in rlimits):
        value = next(v for r, v in rlimits if r == resource.RLIMIT_NPROC)
        parts.append(f"processes: RLIMIT_NPROC {value} (every process of the sandbox's user counts)")
    else:
        parts.append("processes: not bounded (" + missing.get("pids", "root is exempt from RLIMIT_NPROC") + ")")
    if "memory" in held:
        parts.append(f"memory: {gib}, swap off (cgroup v{held['memory'][0]})")
    elif any(r == resource.RLIMIT_AS for r, _ in rlimits):
        parts.append(f"memory: RLIMIT_AS {gib} per process")
    else:
        parts.append("memory: not bounded (" + missing.get("memory", "RLIMIT_AS breaks CUDA's reservations") + ")")
    parts.append(f"freezing: cgroup v{held['freezer'][0]}" if "freezer" in held else "freezing: signals")
    parts.append(f"cpu: counted by cgroup v{held['cpu'][0]}" if "cpu" in held else "cpu: counted per process")
    return "bounds: " + ", ".join(parts)


def bound(sandbox_id: str, b: Bounds, *, uid: int | None, device: str,
          deny_devices: list[str] = ()) -> SandboxBounds:
    """The bounds of a new sandbox, held the strongest way this process can: its own group
    (made now, named as its directory) for what a hierarchy here holds, limits for the rest."""
    run = run_group()
    group = None
    missing = dict(run.missing)
    if run.group.dirs:
        try:
            group = run.group.child(sandbox_id, cgroup.FEATURES)
            if group.has("pids"):
                group.limit_pids(b.pids)
            if group.has("memory"):
                group.limit_memory(b.memory_bytes)
            if group.has("devices") and deny_devices:
                group.deny_devices(list(deny_devices))
        except (CgroupError, OSError) as e:
            if group is not None:
                group.remove(timeout_s=1.0)
            group = None
            missing = {f: f"its group could not be made: {e}" for f in cgroup.FEATURES}
    held = set(group.dirs) if group is not None else set()
    return SandboxBounds(b, group, fallback_limits(b, held, uid, device), missing)


def fallback_limits(b: Bounds, held: set[str], uid: int | None, device: str) -> list[tuple[int, int]]:
    """The rlimits that stand in for what no group holds: RLIMIT_NPROC at what the sandbox's
    user (`uid`, else ours) runs now plus the bound (the kernel counts per user, and never
    for root), and on cpu RLIMIT_AS at the memory bound, per process."""
    out: list[tuple[int, int]] = []
    user = uid if uid is not None else os.geteuid()
    if "pids" not in held and user != 0:
        out.append((resource.RLIMIT_NPROC, _tasks_of(user) + b.pids))
    if "memory" not in held and device == "cpu":
        out.append((resource.RLIMIT_AS, b.memory_bytes))
    return out
