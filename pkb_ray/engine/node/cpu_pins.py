"""Cores for a GPU evaluation's processes: judge r on a core of its own, rank r of the
reference's worker and of the candidate's on another, which they share; the same cores for
every evaluation on that GPU. The candidate's ranks yield that core (SCHED_IDLE).

Why. The judge times both halves of a sample by its own clock, from opening the gate to the
worker's answer, less the floor. The GPU work is the same for a reference timed against
itself, and the workers' own CUDA events say so (0.996-1.009 for 12 of 12, unpinned, on one
H100 at world size 1). The windows do not: left to the scheduler, a worker waking on a core
the judge or another process used, or one that had gone idle, adds tens of microseconds to
every answer, for the whole evaluation: 4 and 6 of 12 self-timed within 1.00 +- 0.03 with
the interval holding 1.0, unpinned. Both workers on one core,
the judge on another: 10 and 8; the candidate's yielding as below: 10 and 11. Each worker on
a core of its own: 4 and 6 again (two cores are two instruments; one core is one).

Sharing a core, a candidate's spinning thread would slow the reference's half, and look
faster for it. So the candidate's ranks run at SCHED_IDLE: the reference's thread, woken,
takes the core at once. When the candidate's half runs the reference's worker is waiting, so
SCHED_IDLE costs an honest candidate nothing. SCHED_IDLE ranks threads within one
scheduling group only, and each sandbox is a session of its own, which the kernel's
autogroup (on by default) makes a group of its own at full weight: the candidate's group is
set to nice 19 as well (/proc/self/autogroup: a spinner in its own session takes half the
core from a normal task). A guarded rank can change neither
its core, its policy nor its group (no_network's filter refuses sched_setaffinity,
sched_setscheduler, sched_setattr and setsid; lowering a nice value needs a privilege it
has not got). Where the yielding cannot be had, the rank is not pinned at all: sharing the
reference's core at equal weight would be worse than the scheduler's choice.

Cores are taken from the top of what this process may use, two per GPU by its index
(nvidia-smi's), leaving the lowest ones to the node, Ray and the system; a machine with too
few cores for every GPU it has is not pinned at all. The GPU's own NUMA node is not
preferred (the judge and both workers of a GPU are on the same side either way).

On cpu the calls are the work the judge times, and how fast a rank's threads hand work to
each other (its gloo loop threads) depends on their scheduling class: there BOTH workers
yield (SCHED_IDLE, autogroup nice 19) and neither is pinned (yields()). CPU self-checks of
12 references timed against themselves, on a 2-core CPU machine: both SCHED_OTHER and
unpinned, the geomean read 1.011, 0.993, 1.009 with log(speedup) spread 0.157 over the 36;
both yielding, unpinned, 0.953-1.051 over six runs, spread 0.094 (0.066 with the next
evaluation's sandboxes started after this one: judge_node.py); the candidate alone yielding
made a reference read 2.3-3.4 against itself (SCHED_IDLE ran its calls in a third of the
time); rank r of both workers pinned to core r beside judge r, both yielding: bimodal,
0.68-0.79 or 1.22-1.42 (spread 0.27). The price of both yielding: a candidate's spinning
thread shares a core with the reference's half at equal weight (README, Known limits).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

PER_GPU = 2
RESERVED = 2
"""Cores left unpinned for the node process, Ray and the system."""


@dataclass(frozen=True)
class RankCores:
    judge: int
    workers: int
    """Rank r of the reference's worker and of the candidate's (which yields it)."""


def plan(gpu_indices: list[int], gpus_on_node: int, allowed: list[int] | None = None) -> tuple[RankCores, ...]:
    """The cores of each rank (rank r on gpu_indices[r]), or () when this machine has fewer
    than PER_GPU cores per GPU on the node plus RESERVED."""
    cores = sorted(os.sched_getaffinity(0)) if allowed is None else sorted(allowed)
    if not gpu_indices or len(cores) < PER_GPU * max(gpus_on_node, max(gpu_indices) + 1) + RESERVED:
        return ()
    top = cores[::-1]
    return tuple(RankCores(*(top[PER_GPU * g + i] for i in range(PER_GPU))) for g in gpu_indices)


def unpinned(node_gpus: Sequence[int], allowed: list[int] | None = None,
             siblings: Callable[[int], frozenset[int]] | None = None) -> tuple[int, ...]:
    """The cores plan() pins nothing to for any group of a node with these GPUs (by their
    indices), nor shares a physical core with one: where a worker started ahead of its
    evaluation sets up (its torch import, 1-3 s of CPU, then its CUDA context, group and
    NCCL communicator, about a second) before it moves to its own core. Set up on a pinned core, a spare
    worker took that core from the evaluation before it, whose timing phase had begun where
    the candidate's trials were short; set up on the other hyperthread of a pinned core, it
    takes the core's execution units from a judge or worker of whichever GPU group is timing
    there (every group's spares set up at once on a grouped node). Hyperthread siblings are
    kept out only while at least half of the cores left remain (a setup starved of cores
    would make the next evaluation wait for its sandbox instead). () where nothing is pinned."""
    cores = sorted(os.sched_getaffinity(0)) if allowed is None else sorted(allowed)
    node = sorted(set(node_gpus))
    if not node or len(cores) < PER_GPU * max(len(node), node[-1] + 1) + RESERVED:
        return ()
    top = cores[::-1]
    pinned = {top[PER_GPU * g + i] for g in node for i in range(PER_GPU)}
    free = [c for c in cores if c not in pinned]
    sibling_of = siblings or smt_siblings
    apart = [c for c in free if not (sibling_of(c) & pinned)]
    return tuple(apart if len(apart) >= max(RESERVED, len(free) // 2) else free)


def smt_siblings(core: int) -> frozenset[int]:
    """The logical CPUs that share `core`'s physical core, itself included (sysfs; just
    itself where the kernel does not say)."""
    try:
        with open(f"/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list") as f:
            text = f.read().strip()
    except OSError:
        return frozenset({core})
    out = {core}
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        try:
            out.update(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            return frozenset({core})
    return frozenset(out)


def yields(device: str, role: str, pinned: bool) -> bool:
    """Whether a worker of `role` (reference | candidate) yields: on cuda the candidate's,
    and only where it is pinned (the docstring above); on cpu both, unpinned."""
    return device == "cpu" or (role == "candidate" and pinned)
