"""The problem contract every stage relies on.

A problem is a directory `problems/<id>/` holding everything about it:

    problem.yaml   metadata (see ProblemSpec's fields), sizes and tolerances
    reference.py   `solution(*inputs)`: PyTorch + torch.distributed, PKB-compatible; this
                   file is what models are shown
    inputs.py      `make_inputs(rank, world_size, seed, size, device)` -> tuple of arguments
                   (`size` is the dict under `sizes.<name>` in problem.yaml; the loader
                   adds `dtype` to it: the problem's dtype unless the size sets its own), and
                   `roofline(world_size, size)` -> dict with the RooflineCounts fields.
                   An argument is a Tensor, int, float, bool, str, None, or a list, tuple or
                   dict (str keys) nesting these (args.NATIVE_LEAF_TYPES); outputs nest the
                   same way.
    truth.py       `expected(inputs: list[tuple], world_size) -> list`: every rank's output
                   computed in one process from all ranks' inputs (tests/selfcheck/test_semantics.py)
    expert.py      optional: a hand-written symmetric-memory candidate (`model=expert`)

Problems imported from an upstream PKB checkout satisfy the same `Problem` interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

CATEGORIES = (
    "collective",
    "tensor",
    "sequence",
    "context",
    "pipeline",
    "data",
    "expert",
    "fsdp_zero",
    "vocab",
    "graph",
    "geometric_spatial",
    "other",
)

SIZE_NAMES = ("small", "bench")


@dataclass(frozen=True)
class RooflineCounts:
    """The least work one rank must do, for a world size and size."""

    nvlink_bytes_per_rank: float
    """Bytes the busiest rank must send or receive over NVLink (the larger of the two)."""
    flops_per_rank: float
    """Floating-point operations the busiest rank must do."""
    hbm_bytes_per_rank: float
    """Bytes the busiest rank must read plus write in its own HBM."""


@dataclass(frozen=True)
class ProblemSpec:
    """Metadata of one problem, validated at load time."""

    id: str
    title: str
    category: str
    origin: str
    """Codebase the workload is drawn from (Megatron-LM, DeepSpeed, DeepEP, ...)."""
    parallelism: str
    """e.g. `tensor parallel (row)`, `expert parallel`, `ZeRO-3`."""
    world_sizes: tuple[int, ...]
    """World sizes a sweep runs the problem at."""
    dtype: str
    atol: float
    rtol: float
    sizes: dict[str, dict[str, Any]]
    """`small` (CPU tests, seconds on 2 cores) and `bench` (GPU timing) parameters."""
    description: str = ""
    upstream: tuple[int, ...] = ()
    """Upstream PKB problem ids (1-87) that compute the same thing."""
    upstream_partial: tuple[int, ...] = ()
    """Upstream ids this problem resembles without computing the same thing (not coverage)."""
    tolerance_reason: str = ""
    """Why atol/rtol are what they are (dtype, reduction order)."""
    test_world_sizes: tuple[int, ...] = ()
    """World sizes the problem is also defined at, run only when asked for by name (`pkb eval
    --world-size 1`, `pkb problems check --world-size 1`, the engine's GPU tests and timing
    benchmarks on a one-GPU machine): a sweep's problem selection at its world size takes
    `world_sizes` alone. `[1]` for a problem whose computation is defined at one rank (its
    collectives become copies), so a one-GPU machine can run the whole harness on it."""
    ranked_outputs: tuple[tuple[int, int], ...] = ()
    """Pairs (values, ids) of top-level outputs that are a top-k along the last dimension:
    the ids are compared up to ties of the reference's values (which of two tied items comes
    first, or makes the cut, is the implementation's choice: engine/judge/comparator.py). The
    ids tied with the last value are free (their ties may be with items not returned), so
    the ids are checked only as far as the values separate them; a top-1 is compared exactly."""
    version: str = ""
    """Hash of the problem's files: part of every cache key."""
    directory: Path | None = None
    source: str = "builtin"

    def runs_at(self, world_size: int, *, tests: bool = False) -> bool:
        """Whether the problem runs at `world_size`: in a sweep (`world_sizes`), or with
        `tests` when asked for by name (also `test_world_sizes`)."""
        return world_size in self.world_sizes or (tests and world_size in self.test_world_sizes)

    def world_size_refusal(self, world_size: int, *, tests: bool = False) -> str:
        """Why the problem does not run at `world_size` (empty when it does), for the user."""
        if self.runs_at(world_size, tests=tests):
            return ""
        if world_size in self.test_world_sizes:
            return (f"problem {self.id!r} runs at world size {world_size} only when asked for by name "
                    f"(test_world_sizes {list(self.test_world_sizes)}); a sweep runs it at {list(self.world_sizes)}")
        also = f" (and {list(self.test_world_sizes)} when asked for)" if self.test_world_sizes else ""
        return (f"problem {self.id!r} is not defined at world size {world_size}: it runs at world sizes "
                f"{list(self.world_sizes)}{also}")


@dataclass
class Problem:
    """A loaded problem: its spec plus the callables stages need."""

    spec: ProblemSpec
    solution: Callable[..., Any]
    """The reference `solution(*inputs)`."""
    reference_source: str
    make_inputs_fn: Callable[..., tuple]
    roofline_fn: Callable[[int, dict[str, Any]], dict[str, float]] | None = None
    expert_source: str | None = None
    degenerate: tuple[str, ...] = ()
    """Why this problem's inputs cannot tell a correct candidate from a shortcut (constant
    fills, every seed alike); empty when they can. Only upstream problems may load with it:
    results of a degenerate problem carry the `degenerate` flag."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def is_upstream(self) -> bool:
        """Imported from an upstream PKB checkout (held to upstream's contract, not ours)."""
        return self.spec.source.startswith("pkb:")

    def make_inputs(
        self, rank: int, world_size: int, seed: int, size: str, device: str = "cpu"
    ) -> tuple:
        """Rank `rank`'s inputs for one trial; `size` names an entry of spec.sizes."""
        return tuple(self.make_inputs_fn(rank, world_size, seed, self.spec.sizes[size], device))

    def roofline(self, world_size: int, size: str) -> RooflineCounts | None:
        if self.roofline_fn is None:
            return None
        return RooflineCounts(**self.roofline_fn(world_size, self.spec.sizes[size]))


@dataclass(frozen=True)
class ProblemError:
    """A problem that failed to load; the others still load."""

    problem: str
    path: str
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f" (field `{self.field}`)" if self.field else ""
        return f"problem {self.problem!r} at {self.path}{where}: {self.message}"
