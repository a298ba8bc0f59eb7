"""Control groups as the harness uses them: find the hierarchies, make a group, bound it,
freeze it, count its CPU, kill what is in it and remove it. Standard library only.

Runs in the node's processes (which make, bound and remove a sandbox's group,
launch/bounds.py) and in the judges (which move a rank into a group of its own, freeze it
between timing halves and count its CPU, judge/freezer.py). Every process a sandbox makes
is born in its group and stays there whatever its parent or pid: a fork storm is counted
against `pids.max`, a stray the sandbox left is frozen with its rank, and CPU a process
used before the kernel reaped it is still in the group's count.

Two layouts, told apart from /proc/self/mountinfo:
  v2      one hierarchy (the GPU nodes: kernel 6.18). Freezing (cgroup.freeze) and CPU
          accounting (cpu.stat) are part of every group; pids and memory only where the
          parent enables them in cgroup.subtree_control, which a group that holds
          processes of its own cannot do (v2's "no internal processes" rule).
  v1      one hierarchy per controller (pids, memory, freezer, cpuacct, devices), and in a
          hybrid layout a v2 tree beside them, usually with no controller (the CPU machines).
Each feature comes from a mounted v1 controller where there is one, else from v2: one
process is in one group per hierarchy, so every v2 feature shares one directory.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass, field

FEATURES = ("pids", "memory", "freezer", "cpu", "devices")
V1_CONTROLLER = {"pids": "pids", "memory": "memory", "freezer": "freezer", "cpu": "cpuacct", "devices": "devices"}
V2_CONTROLLER = {"pids": "pids", "memory": "memory", "freezer": "", "cpu": "", "devices": ""}
"""What a v2 group needs from its parent's subtree_control for each feature ("": nothing,
the feature is part of every group)."""
SANDBOX_PREFIX = "pkb_sbx_"
"""A sandbox's group is named as its working directory (launch/process.py); a judge takes a
group for a sandbox's only under that name."""
FREEZE_WAIT_S = 2.0
"""How long freeze(wait=True) waits for the kernel to say every task is frozen. A task in an
uninterruptible sleep (a driver call) freezes when it returns; the CPU count stays right
either way (it is read from the group, not from the tasks)."""


class CgroupError(OSError):
    """A group's file could not be read or written."""


@dataclass(frozen=True)
class Mount:
    version: int
    path: str
    """The mount point."""
    root: str
    """The hierarchy's path at the mount point (mountinfo's root: "/" unless a subtree is
    mounted, as in a container)."""
    controllers: frozenset[str] = frozenset()
    """v1: the controllers of this hierarchy (a mount may hold several: cpu,cpuacct)."""

    def host_dir(self, hier_path: str) -> str | None:
        """The directory of the group at `hier_path` in this hierarchy, or None when the
        mount does not show it."""
        root = self.root.rstrip("/")
        if hier_path != root and not hier_path.startswith(root + "/"):
            return None
        return os.path.join(self.path, hier_path[len(root):].lstrip("/")).rstrip("/") or "/"


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def mounts() -> list[Mount]:
    """The cgroup hierarchies mounted in this mount namespace (first mount of each)."""
    try:
        lines = open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape").read().splitlines()
    except OSError:
        return []
    out: list[Mount] = []
    seen: set[frozenset[str] | int] = set()
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], set(tail[2].split(","))
        if fstype == "cgroup2":
            key: frozenset[str] | int = 2
            mount = Mount(2, _unescape(fields[4]), _unescape(fields[3]))
        elif fstype == "cgroup":
            ctrls = frozenset(o for o in options if o in V1_CONTROLLER.values())
            if not ctrls:
                continue  # name=systemd and the like: no controller of ours
            key = ctrls
            mount = Mount(1, _unescape(fields[4]), _unescape(fields[3]), ctrls)
        else:
            continue
        if key not in seen:
            seen.add(key)
            out.append(mount)
    return out


def membership(pid: int | str = "self") -> dict[str, str]:
    """The groups a process is in, by hierarchy: "v2" -> path, and each v1 controller -> path
    (paths as the hierarchy names them, "/" its root). {} when it is gone."""
    out: dict[str, str] = {}
    try:
        lines = open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="surrogateescape").read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, path = parts
        if ctrls == "":
            out["v2"] = path
        for c in ctrls.split(","):
            if c:
                out[c] = path
    return out


# --------------------------------------------------------------------------- file access

def read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise CgroupError(e.errno, f"cannot read {path}: {e.strerror}") from e


def write(path: str, text: str) -> None:
    """One write(2) of `text`: a cgroup file takes a value per write and reports a refusal
    (EINVAL, EBUSY, ENOSPC...) on it, which a buffered file would defer to close()."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as e:
        raise CgroupError(e.errno, f"cannot open {path}: {e.strerror}") from e
    try:
        os.write(fd, text.encode())
    except OSError as e:
        raise CgroupError(e.errno, f"{path} refused {text.strip()!r}: {e.strerror}") from e
    finally:
        os.close(fd)


def keyed(path: str) -> dict[str, int]:
    """A flat-keyed file ("key value" per line: cpu.stat, pids.events, memory.events)."""
    out = {}
    for line in read(path).splitlines():
        k, _, v = line.partition(" ")
        try:
            out[k] = int(v)
        except ValueError:
            continue
    return out


# --------------------------------------------------------------------------- a group

@dataclass
class Group:
    """One group, as a directory in each hierarchy that holds one of its features."""

    dirs: dict[str, tuple[int, str]] = field(default_factory=dict)
    """feature -> (cgroup version, directory)."""

    @property
    def paths(self) -> list[str]:
        """Each directory once (features of one hierarchy share one)."""
        return list(dict.fromkeys(d for _, d in self.dirs.values()))

    def has(self, feature: str) -> bool:
        return feature in self.dirs

    def version(self, feature: str) -> int:
        return self.dirs[feature][0]

    def _dir(self, feature: str) -> str:
        return self.dirs[feature][1]

    def child(self, name: str, features: tuple[str, ...]) -> "Group":
        """A group under this one holding `features` (those this one has), made now."""
        dirs = {f: (v, os.path.join(d, name)) for f, (v, d) in self.dirs.items() if f in features}
        child = Group(dirs)
        for path in child.paths:
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                pass
            except OSError as e:
                raise CgroupError(e.errno, f"cannot make {path}: {e.strerror}") from e
        return child

    # ----------------------------------------------------------------- members
    def join(self, pid: int = 0) -> None:
        """Move a process (0: the caller), with all its threads, into every directory."""
        for path in self.paths:
            write(os.path.join(path, "cgroup.procs"), f"{pid or os.getpid()}\n")

    def pids(self) -> set[int]:
        """Every process in this group and the groups under it."""
        out: set[int] = set()
        for path in self.paths:
            for root, _, _ in os.walk(path):
                try:
                    out.update(int(p) for p in read(os.path.join(root, "cgroup.procs")).split())
                except (CgroupError, ValueError):
                    continue
        return out

    # ----------------------------------------------------------------- bounds
    def limit_pids(self, n: int) -> None:
        write(os.path.join(self._dir("pids"), "pids.max"), f"{n}\n")

    def limit_memory(self, nbytes: int) -> bool:
        """memory.max (v2) or memory.limit_in_bytes (v1), with swap off where the kernel
        counts it (memory.swap.max = 0; memsw = the same limit). True if swap is off."""
        d = self._dir("memory")
        if self.version("memory") == 2:
            write(os.path.join(d, "memory.max"), f"{nbytes}\n")
            swap = os.path.join(d, "memory.swap.max")
            if os.path.exists(swap):
                write(swap, "0\n")
                return True
            return False
        # v1: memsw >= limit at every step, so the order depends on the direction.
        memsw = os.path.join(d, "memory.memsw.limit_in_bytes")
        steps = [("memory.limit_in_bytes", nbytes)] + ([("memory.memsw.limit_in_bytes", nbytes)]
                                                       if os.path.exists(memsw) else [])
        try:
            for name, v in steps:
                write(os.path.join(d, name), f"{v}\n")
        except CgroupError:
            for name, v in reversed(steps):
                write(os.path.join(d, name), f"{v}\n")
        return os.path.exists(memsw)

    def deny_devices(self, rules: list[str]) -> None:
        """v1 devices.deny, one rule ("c 195:3 rwm") per write."""
        for rule in rules:
            write(os.path.join(self._dir("devices"), "devices.deny"), rule + "\n")

    def bounds_hit(self) -> list[str]:
        """Which bound this group reached, in words naming it ([] for none): forks refused at
        pids.max, and the kernel's OOM killer or a refused allocation at the memory bound.
        Reclaim at the memory bound (memory.events' "max") is not a hit: page cache is
        dropped there in honest runs."""
        out = []
        if self.has("pids"):
            try:
                refused = keyed(os.path.join(self._dir("pids"), "pids.events")).get("max", 0)
                if refused:
                    limit = read(os.path.join(self._dir("pids"), "pids.max")).strip()
                    out.append(f"processes: pids.max={limit} reached ({refused} forks refused)")
            except CgroupError:
                pass
        if self.has("memory"):
            d = self._dir("memory")
            try:
                if self.version("memory") == 2:
                    ev = keyed(os.path.join(d, "memory.events"))
                    limit = read(os.path.join(d, "memory.max")).strip()
                    name = "memory.max"
                else:
                    ev = keyed(os.path.join(d, "memory.oom_control"))
                    ev["oom"] = ev.get("under_oom", 0)
                    limit = read(os.path.join(d, "memory.limit_in_bytes")).strip()
                    name = "memory.limit_in_bytes"
                kills, ooms = ev.get("oom_kill", 0), ev.get("oom", 0)
                if kills or ooms:
                    mib = f"{int(limit) >> 20} MiB" if limit.isdigit() else limit
                    out.append(f"memory: {name}={mib} reached ({kills} processes killed by the kernel)")
            except CgroupError:
                pass
        return out

    def peaks(self) -> dict[str, int]:
        """The most processes and bytes this group held at once, where the kernel keeps them."""
        out = {}
        for key, feature, names in (("pids_peak", "pids", ("pids.peak",)),
                                    ("memory_peak_bytes", "memory", ("memory.peak", "memory.max_usage_in_bytes"))):
            if self.has(feature):
                for name in names:
                    try:
                        out[key] = int(read(os.path.join(self._dir(feature), name)).split()[0])
                        break
                    except (CgroupError, ValueError, IndexError):
                        continue
        return out

    # ----------------------------------------------------------------- freezing and CPU
    def freeze(self, wait: bool = False) -> bool:
        """Freeze every task in the group and under it. Each task freezes when it next runs
        (at SCHED_IDLE on a loaded machine, tens of ms later), as SIGSTOP stops it: the judge
        does not wait for that unless asked (`wait`: True once the kernel says all are)."""
        _set_frozen(*self.dirs["freezer"], True)
        if not wait:
            return self.frozen()
        end, pause = time.monotonic() + FREEZE_WAIT_S, 0.0001
        while not self.frozen():
            if time.monotonic() > end:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
        return True

    def frozen(self) -> bool:
        version, d = self.dirs["freezer"]
        if version == 2:
            return keyed(os.path.join(d, "cgroup.events")).get("frozen", 0) == 1
        return read(os.path.join(d, "freezer.state")).strip() == "FROZEN"

    def thaw(self) -> None:
        _set_frozen(*self.dirs["freezer"], False)

    def cpu_ns(self) -> int:
        """CPU time used by every task that was ever in the group or under it, in ns."""
        d = self._dir("cpu")
        if self.version("cpu") == 2:
            return keyed(os.path.join(d, "cpu.stat"))["usage_usec"] * 1000
        return int(read(os.path.join(d, "cpuacct.usage")).strip())

    # ----------------------------------------------------------------- the end
    def kill(self) -> None:
        """SIGKILL every process in the group and under it, frozen ones included: v2's
        cgroup.kill where there is one, else frozen first (nothing forks meanwhile), each
        killed, then thawed so that the kill lands (v1 holds signals to frozen tasks)."""
        v2 = [d for v, d in self.dirs.values() if v == 2]
        if v2 and os.path.exists(os.path.join(v2[0], "cgroup.kill")):
            try:
                write(os.path.join(v2[0], "cgroup.kill"), "1\n")
                if not self.has("freezer") or self.version("freezer") == 2:
                    return
            except CgroupError:
                pass
        freezer = self.has("freezer")
        if freezer:
            try:
                _set_frozen(*self.dirs["freezer"], True)
            except CgroupError:
                freezer = False
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if freezer:  # a group under this one frozen by itself stays frozen when this one thaws
            version, top = self.dirs["freezer"]
            for root, _, _ in os.walk(top, topdown=False):
                try:
                    _set_frozen(version, root, False)
                except CgroupError:
                    pass

    def remove(self, timeout_s: float = 10.0) -> bool:
        """Kill what is left and remove every directory, children first, once empty; True
        when nothing of the group is left. A dying process stays a member until the kernel
        has released it (a CUDA context takes a few hundred ms), hence the wait."""
        end = time.monotonic() + timeout_s
        killed_at = 0.0
        while True:
            if self.pids() and time.monotonic() - killed_at > 0.5:
                self.kill()
                killed_at = time.monotonic()
            left = []
            for path in self.paths:
                for root, _, _ in sorted(os.walk(path), key=lambda w: len(w[0]), reverse=True):
                    try:
                        os.rmdir(root)
                    except FileNotFoundError:
                        pass
                    except OSError:
                        left.append(root)
            if not left:
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.05)


def _set_frozen(version: int, path: str, on: bool) -> None:
    if version == 2:
        write(os.path.join(path, "cgroup.freeze"), "1\n" if on else "0\n")
    else:
        write(os.path.join(path, "freezer.state"), "FROZEN\n" if on else "THAWED\n")


def sandbox_group(pid: int, features: tuple[str, ...] = FEATURES) -> Group | None:
    """The group of the sandbox whose first process is `pid`, as a judge finds it from the
    host: in each hierarchy, the group `pid` is in if it is a sandbox's (SANDBOX_PREFIX);
    v1 before v2 for a feature, as the node chose. None when it is in none."""
    where = membership(pid)
    dirs: dict[str, tuple[int, str]] = {}
    found = mounts()
    for feature in features:
        for mount in sorted(found, key=lambda m: m.version):
            if mount.version == 1 and V1_CONTROLLER[feature] not in mount.controllers:
                continue
            path = where.get("v2" if mount.version == 2 else V1_CONTROLLER[feature])
            if path is None or not os.path.basename(path).startswith(SANDBOX_PREFIX):
                continue
            d = mount.host_dir(path)
            if d and os.path.isdir(d):
                dirs[feature] = (mount.version, d)
                break
    return Group(dirs) if dirs else None
