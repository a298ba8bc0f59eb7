"""The shapes and dtypes a candidate's `solution` receives, per rank, at one size and world size.

The prompt states the real inputs of the evaluation, not the size parameters that make them.
Inputs are built under torch's FakeTensorMode (shapes without memory: 33 builtin problems at
bench size in about 1 s on a 2-core CPU, no 64 MiB tensors); a problem whose inputs depend
on their own values (e.g. tokens routed to a rank) is built for real on the CPU instead,
once per rank (moe_combine at bench size: about 0.5 GB), and a dimension that differs
between ranks is stated as varying per call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pkb_ray.problems.spec import Problem

SHAPE_SEED = 1
"""Any seed: shapes that do not depend on values do not depend on it."""


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


def _varying(specs: list[InputSpec]) -> InputSpec:
    """The first rank's spec, with the dimensions that differ between ranks marked."""
    first = specs[0]
    if first.shape is None or any(s.shape is None or len(s.shape) != len(first.shape) for s in specs):
        return first
    varies = tuple(len({s.shape[i] for s in specs}) > 1 for i in range(len(first.shape)))
    return InputSpec(first.shape, first.dtype, varies)


def _build(problem: Problem, world_size: int, size: str) -> list[tuple[InputSpec, ...]]:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    def make(rank: int) -> tuple[InputSpec, ...]:
        return tuple(_spec(x) for x in problem.make_inputs(rank, world_size, SHAPE_SEED, size, "cpu"))

    try:
        with FakeTensorMode():
            return [make(rank) for rank in range(world_size)]
    except (RuntimeError, GuardOnDataDependentSymNode, NotImplementedError):
        # Shapes that depend on values (DataDependentOutputException is a RuntimeError).
        per_rank = [make(rank) for rank in range(world_size)]
        marked = [_varying([r[i] for r in per_rank]) for i in range(len(per_rank[0]))]
        return [tuple(InputSpec(spec.shape, spec.dtype, m.varies) for spec, m in zip(r, marked))
                for r in per_rank]


_CACHE: dict[tuple, list[tuple[InputSpec, ...]]] = {}
DISK_CACHE = Path("~/.cache/pkb_ray/input_specs")
"""Specs kept across processes, by problem version, world size, size and torch version: the
107 builtin problems at bench size took 37 s to build on a 2-core CPU (19 of them build real
tensors), paid by every sweep with API models and every dry run before its plan."""


def input_specs(problem: Problem, world_size: int, size: str) -> list[tuple[InputSpec, ...]]:
    """Per rank, the specs of `solution`'s arguments at `size` and `world_size`; kept per
    problem version in this process (the driver and each generation actor build them once)
    and on disk (DISK_CACHE)."""
    s = problem.spec
    key = (s.id, s.version, s.source, world_size, size)
    if key not in _CACHE:
        _CACHE[key] = _cached(problem, world_size, size)
    return _CACHE[key]


def _cached(problem: Problem, world_size: int, size: str) -> list[tuple[InputSpec, ...]]:
    import hashlib
    import json

    import torch

    s = problem.spec
    name = hashlib.sha256(json.dumps([s.id, s.version, world_size, size, torch.__version__]).encode()).hexdigest()
    path = DISK_CACHE.expanduser() / f"{name[:32]}.json"
    try:
        return [tuple(InputSpec(tuple(a["shape"]) if a["shape"] is not None else None, a["dtype"],
                                tuple(a["varies"])) for a in rank) for rank in json.loads(path.read_text())]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not kept yet, or unreadable: build it
    specs = _build(problem, world_size, size)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps([[{"shape": a.shape, "dtype": a.dtype, "varies": a.varies} for a in rank]
                                   for rank in specs]))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: built again next time
    return specs


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
