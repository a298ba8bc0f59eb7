"""The shapes and dtypes a candidate's `solution` receives, per rank, at one size and world size.

The prompt states the real inputs of the evaluation, not the size parameters that make them.
Inputs are built under torch's FakeTensorMode (shapes without memory: 33 builtin problems at
bench size in about 1 s on a 2-core CPU, no 64 MiB tensors); a problem whose inputs depend
on their own values (e.g. routing counts) is built for real on the CPU instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pkb_ray.problems.spec import Problem

SHAPE_SEEDS = (1, 2)
"""Two seeds for a problem built for real: a dimension that differs between them depends on
the values (e.g. tokens routed to a rank) and is stated as varying."""


@dataclass(frozen=True)
class InputSpec:
    """One argument of `solution(*inputs)` on one rank."""

    shape: tuple[int, ...] | None
    """None for a non-tensor argument."""
    dtype: str
    """`bfloat16`, ..., or the Python type name of a non-tensor argument."""
    varies: tuple[bool, ...] = ()
    """Per dimension: True when it changes from call to call (data-dependent)."""

    def describe(self) -> str:
        if self.shape is None:
            return self.dtype
        dims = [f"~{d} (varies per call)" if i < len(self.varies) and self.varies[i] else str(d)
                for i, d in enumerate(self.shape)]
        return f"{self.dtype}[{', '.join(dims)}]"


def _spec(x: Any) -> InputSpec:
    import torch

    if isinstance(x, torch.Tensor):
        return InputSpec(tuple(int(d) for d in x.shape), str(x.dtype).removeprefix("torch."))
    return InputSpec(None, type(x).__name__)


def _merge(a: InputSpec, b: InputSpec) -> InputSpec:
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return a
    return InputSpec(a.shape, a.dtype, tuple(x != y for x, y in zip(a.shape, b.shape)))


def _build(problem: Problem, rank: int, world_size: int, size: str) -> tuple:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    def make(seed: int) -> tuple:
        return tuple(_spec(x) for x in problem.make_inputs(rank, world_size, seed, size, "cpu"))

    try:
        with FakeTensorMode():
            return make(SHAPE_SEEDS[0])
    except (RuntimeError, GuardOnDataDependentSymNode, NotImplementedError):
        # Shapes that depend on values (DataDependentOutputException is a RuntimeError).
        first, second = make(SHAPE_SEEDS[0]), make(SHAPE_SEEDS[1])
        return tuple(_merge(a, b) for a, b in zip(first, second))


def input_specs(problem: Problem, world_size: int, size: str) -> list[tuple[InputSpec, ...]]:
    """Per rank, the specs of `solution`'s arguments at `size` and `world_size`."""
    return [_build(problem, rank, world_size, size) for rank in range(world_size)]


def describe_inputs(problem: Problem, world_size: int, size: str, names: list[str] | None = None) -> str:
    """Markdown list items (indented under a parent item): one per argument when every rank gets the same shapes, else one
    line per rank. `names` are the argument names of `solution` (positional order)."""
    per_rank = input_specs(problem, world_size, size)
    label = lambda i: f"`{names[i]}`" if names and i < len(names) else f"argument {i}"  # noqa: E731
    if all(r == per_rank[0] for r in per_rank):
        return "\n".join(f"  - {label(i)}: {s.describe()} (every rank)" for i, s in enumerate(per_rank[0]))
    lines = []
    for rank, specs in enumerate(per_rank):
        args = ", ".join(f"{label(i)} {s.describe()}" for i, s in enumerate(specs))
        lines.append(f"  - rank {rank}: {args}")
    return "\n".join(lines)
