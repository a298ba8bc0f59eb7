"""GPU groups: one node's GPUs lent to several evaluations at once, each its own disjoint set.

A node actor holds the whole node (one actor per GPU breaks symmetric memory), but an
evaluation at world size 2 uses 2 of its 8 GPUs. `GpuGroups` lends each evaluation a group
of `world_size` free GPUs, chosen by the measured topology (the set whose weakest link is
best: on NVSwitch nodes every pair is equal and the lowest free indices are taken, which
keeps groups aligned), and counts, for every lease, how many other evaluations ran on the
node while it was held: its co-tenancy, recorded with the result.

Requests are served first come, first served: a 4-GPU request at the head of the queue is
not overtaken by later 2-GPU ones, so mixed world sizes pack without starving the larger.
(Backfilling smaller requests around a waiting large one would use GPUs better for a while
and can starve it indefinitely; a sweep's requests are nearly all one size anyway.)

`exclusive` lends one group at a time: one evaluation per node, for publication-grade
timing where no neighbour shares the host, the PCIe switches or the NVSwitch fabric.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

LINK_SCORES = {"NV": 100, "PIX": 50, "PXB": 40, "PHB": 30, "NODE": 20, "SYS": 10}
"""How good a link between two GPUs is, from `nvidia-smi topo -m`'s legend: NVLink (NV<k>,
k bonded links, scored 100 + k) above one PCIe switch (PIX), several (PXB), the host bridge
(PHB), the NUMA node (NODE) and the inter-socket link (SYS)."""

MAX_COMBINATIONS = 5000
"""Past this many candidate sets (16 GPUs, groups of 8: 12870) the set is grown greedily."""


@dataclass(frozen=True)
class Topology:
    """Link scores between a node's GPUs (by the node's GPU index) and the link names."""

    gpus: tuple[int, ...]
    scores: dict[tuple[int, int], int] = field(default_factory=dict)
    names: dict[tuple[int, int], str] = field(default_factory=dict)
    source: str = "uniform"
    """"nvidia-smi" (measured) or "uniform" (no topology known: every pair equal)."""

    def score(self, a: int, b: int) -> int:
        return self.scores.get((min(a, b), max(a, b)), 0)

    def link(self, group: tuple[int, ...]) -> str:
        """The weakest link inside a group, by its nvidia-smi name ("NV18", "SYS"); "self"
        for one GPU, "uniform" where no topology was measured."""
        if len(group) < 2:
            return "self"
        if self.source != "nvidia-smi":
            return "uniform"
        pairs = list(itertools.combinations(sorted(group), 2))
        weakest = min(pairs, key=lambda p: self.score(*p))
        return self.names.get(weakest, "?")


def uniform(gpus: list[int] | tuple[int, ...]) -> Topology:
    ids = tuple(sorted(gpus))
    return Topology(ids, {p: 1 for p in itertools.combinations(ids, 2)}, {}, "uniform")


def parse_topo_matrix(text: str, gpus: list[int] | tuple[int, ...]) -> Topology:
    """The topology of `gpus` from `nvidia-smi topo -m` output; pairs it does not name score 0.
    Rows and columns are "GPU<i>" with the node's indices, which is what Ray hands an actor."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # nvidia-smi underlines its header on a terminal
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # The header is indented (its first cell is the rows' names); the rows start with GPU<i>.
    header = next((ln.split() for ln in lines if ln[:1].isspace() and re.search(r"\bGPU\d", ln)), None)
    ids = tuple(sorted(gpus))
    if header is None:
        return uniform(ids)
    cols = [int(c[3:]) for c in header if re.fullmatch(r"GPU\d+", c)]
    scores: dict[tuple[int, int], int] = {}
    names: dict[tuple[int, int], str] = {}
    for ln in lines:
        parts = ln.split()
        if not parts or not re.fullmatch(r"GPU\d+", parts[0]):
            continue
        row = int(parts[0][3:])
        for col, cell in zip(cols, parts[1:1 + len(cols)]):
            if row == col or row not in ids or col not in ids:
                continue
            m = re.fullmatch(r"NV(\d+)", cell)
            score = LINK_SCORES["NV"] + int(m.group(1)) if m else LINK_SCORES.get(cell, 0)
            key = (min(row, col), max(row, col))
            scores[key], names[key] = score, cell
    return Topology(ids, scores, names, "nvidia-smi") if scores else uniform(ids)


def measure(gpus: list[int]) -> Topology:
    """This node's topology from nvidia-smi (no CUDA in this process); uniform when it cannot
    be read (no GPUs, no nvidia-smi: CPU nodes with Ray's fake GPU resources)."""
    if len(gpus) < 2:
        return uniform(gpus)
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return uniform(gpus)
    return parse_topo_matrix(out.stdout, gpus) if out.returncode == 0 else uniform(gpus)


def best_group(free: list[int], n: int, topo: Topology) -> tuple[int, ...]:
    """The n free GPUs whose weakest link is best (then the best total, then the lowest
    indices, which packs groups at the low end and leaves whole blocks free above)."""
    free = sorted(free)
    if n <= 1:
        return tuple(free[:n])

    def rank(group: tuple[int, ...]) -> tuple:
        pairs = [topo.score(a, b) for a, b in itertools.combinations(group, 2)]
        return (-min(pairs), -sum(pairs), group)

    combos = itertools.combinations(free, n)
    if math.comb(len(free), n) <= MAX_COMBINATIONS:
        return min(combos, key=rank)
    group = [free[0]]  # greedy: grow from the lowest index by the best link to the set
    while len(group) < n:
        rest = [g for g in free if g not in group]
        group.append(max(rest, key=lambda g: (min(topo.score(g, h) for h in group), -g)))
    return tuple(sorted(group))


@dataclass(eq=False)  # leases are told apart by identity: two may hold equal-looking groups
class Lease:
    """One evaluation's GPU group, held until released."""

    gpus: tuple[int, ...]
    link: str
    exclusive: bool
    co_tenancy: int = 0
    """The most other evaluations holding GPUs of this node at any moment of this lease."""
    waited_s: float = 0.0
    node_gpus: tuple[int, ...] = ()
    """Every GPU of the node: what its hardware fingerprint and profile name (as before
    groups), so a result's hardware does not depend on which group it ran on."""
    whole_node: bool = True
    """False where the lender holds only a share of the node (cluster.node_gpus): another
    sweep may run on the rest, which this lender cannot count."""

    @property
    def sharing(self) -> str:
        return "exclusive" if self.exclusive else "groups"

    @property
    def recorded_co_tenancy(self) -> int | None:
        """What a result records: the co-tenancy, or None (not known) on a share of a node."""
        return self.co_tenancy if self.whole_node else None


class GpuGroups:
    """Lends disjoint groups of a node's GPUs; thread-safe (a node actor's evaluations run in
    threads). With no GPUs (a CPU node) it lends one empty group at a time."""

    def __init__(self, gpus: list[int], topology: Topology | None = None, exclusive: bool = False,
                 whole_node: bool = True) -> None:
        self.gpus = tuple(sorted(gpus))
        self.whole_node = whole_node
        self.topology = topology or uniform(self.gpus)
        self.exclusive = exclusive
        self._free = set(self.gpus)
        self._active: list[Lease] = []
        self._queue: list[int] = []
        self._tickets = itertools.count()
        self._cond = threading.Condition()

    def slots(self, world_size: int) -> int:
        """Evaluations of `world_size` this node runs at once."""
        if self.exclusive or not self.gpus:
            return 1
        return max(1, len(self.gpus) // max(1, world_size))

    def acquire(self, n: int, timeout_s: float | None = None) -> Lease:
        """A group of n GPUs (all of the node's when it has fewer: the evaluation then says
        it cannot run). Blocks, first come first served; TimeoutError past timeout_s."""
        n = min(max(0, n), len(self.gpus))
        t0 = time.monotonic()
        with self._cond:
            ticket = next(self._tickets)
            self._queue.append(ticket)
            try:
                while not (self._queue[0] == ticket and self._fits(n)):
                    left = None if timeout_s is None else timeout_s - (time.monotonic() - t0)
                    if left is not None and left <= 0:
                        raise TimeoutError(f"no group of {n} GPUs was free within {timeout_s:.0f} s")
                    self._cond.wait(left)
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()  # the next in line may fit now
            group = best_group(sorted(self._free), n, self.topology) if self.gpus else ()
            self._free.difference_update(group)
            lease = Lease(group, self.topology.link(group), self.exclusive, co_tenancy=len(self._active),
                          waited_s=time.monotonic() - t0, node_gpus=self.gpus, whole_node=self.whole_node)
            self._active.append(lease)
            for other in self._active:
                other.co_tenancy = max(other.co_tenancy, len(self._active) - 1)
            return lease

    def _fits(self, n: int) -> bool:
        if self.exclusive or not self.gpus:
            return not self._active
        return len(self._free) >= n

    @contextlib.contextmanager
    def lend(self, n: int, timeout_s: float | None = None) -> Iterator[Lease]:
        """A group of n GPUs for the block (acquire, then release however it ends)."""
        lease = self.acquire(n, timeout_s)
        try:
            yield lease
        finally:
            self.release(lease)

    def release(self, lease: Lease) -> None:
        with self._cond:
            if lease in self._active:
                self._active.remove(lease)
                self._free.update(lease.gpus)
            self._cond.notify_all()

    def active(self) -> list[tuple[int, ...]]:
        with self._cond:
            return [lease.gpus for lease in self._active]
