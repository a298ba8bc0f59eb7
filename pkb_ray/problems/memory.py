"""How much memory a problem's inputs take per rank, found without allocating them.

Upstream PKB's problem 68 allocates about 28 GB of inputs per rank at world size 2 (at every
size it is given); a node that tries it dies of OOM, on GPU or on a shared CPU box. So the
estimate comes first and a problem that cannot fit is refused with a message that says so.

The inputs are built once under FakeTensorMode (shapes and dtypes, no storage), or on the
meta device where fake tensors cannot go. Input makers that read tensor values (`.item()`,
`.tolist()` of routing decisions) defeat both: their estimate is None (unknown) and they run
as they are; the ones measured so far are small.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Inputs, the copy a check or a harness keeps to detect modification, and outputs of about
# the same size: a reference needs at least three times its input bytes.
PEAK_PER_INPUT_BYTE = 3.0


@dataclass(frozen=True)
class MemoryEstimate:
    """Input bytes of one rank at one (world size, size); None where they cannot be known."""

    input_bytes_per_rank: int | None
    method: str
    """`fake` | `meta` | `unknown: <why>`."""

    @property
    def peak_bytes_per_rank(self) -> int | None:
        if self.input_bytes_per_rank is None:
            return None
        return int(self.input_bytes_per_rank * PEAK_PER_INPUT_BYTE)


class ProblemTooLarge(RuntimeError):
    """The problem's estimated memory per rank exceeds what the node has."""

    def __init__(self, problem: str, size: str, world_size: int, estimate: MemoryEstimate,
                 capacity_bytes: int, where: str):
        self.problem, self.size, self.world_size = problem, size, world_size
        self.estimate, self.capacity_bytes = estimate, capacity_bytes
        super().__init__(
            f"refused: {problem} at size {size!r}, world size {world_size} needs about "
            f"{_gib(estimate.peak_bytes_per_rank)} per rank ({_gib(estimate.input_bytes_per_rank)} of "
            f"inputs x {PEAK_PER_INPUT_BYTE:g}), more than the {_gib(capacity_bytes)} {where} has")


def _gib(n: int | None) -> str:
    return "? GiB" if n is None else f"{n / 2**30:.2f} GiB"


def estimate_inputs(problem, rank: int, world_size: int, size: str, device: str = "cpu") -> MemoryEstimate:
    """Rank `rank`'s input bytes, from shapes alone (see the module docstring)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            args = problem.make_inputs(rank, world_size, 0, size, device)
        return MemoryEstimate(_nbytes(args), "fake")
    except Exception as fake_exc:  # noqa: BLE001 - any failure means "try the next way"
        why = f"{type(fake_exc).__name__}: {str(fake_exc)[:120]}"
    try:
        args = problem.make_inputs(rank, world_size, 0, size, "meta")
        return MemoryEstimate(_nbytes(args), "meta")
    except Exception as meta_exc:  # noqa: BLE001
        why += f"; meta: {type(meta_exc).__name__}: {str(meta_exc)[:120]}"
    return MemoryEstimate(None, f"unknown: {why}")


def _nbytes(args) -> int:
    from pkb_ray.problems.args import tensors

    return sum(t.numel() * t.element_size() for _, t in tensors(args))


def host_bytes_per_rank(world_size: int) -> int:
    """The host memory available now, shared by `world_size` rank processes (CPU checks)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // world_size
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES") // world_size


def require_fits(problem, rank: int, world_size: int, size: str, capacity_bytes: int,
                 where: str, device: str = "cpu") -> MemoryEstimate:
    """The estimate, or ProblemTooLarge when its peak exceeds `capacity_bytes`."""
    est = estimate_inputs(problem, rank, world_size, size, device)
    peak = est.peak_bytes_per_rank
    if peak is not None and peak > capacity_bytes:
        raise ProblemTooLarge(problem.id, size, world_size, est, capacity_bytes, where)
    return est
