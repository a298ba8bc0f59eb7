"""Ground truth: a problem's truth.py computes every rank's output in ONE process from all
ranks' inputs (the un-sharded math, written apart from the reference's communication).

A model reads the description and the reference; if the two disagree, every candidate is
judged against the wrong thing. `pkb problems check` runs each reference in real gloo ranks
and compares what every rank returned with truth.py's `expected(inputs, world_size)`.

    def expected(inputs: list[tuple], world_size: int) -> list:
        '''inputs[r] = rank r's arguments; returns [rank 0's output, rank 1's output, ...]'''

Outputs are compared with the engine's comparator (shapes, dtypes, nesting, values within
ATOL + RTOL * |expected|): truth.py may set module-level ATOL / RTOL where its float64 math
and the reference's float32 math differ by more than the defaults allow (say why there).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pkb_ray.problems.common import import_file

TRUTH_FILE = "truth.py"
# float32 references against float64 truth at the small sizes: sums of up to a few thousand
# terms, ~n * 2^-24 relative, well inside 1e-4; 1e-5 absolute for results near zero.
DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-4


@dataclass(frozen=True)
class Truth:
    expected: Callable[[list, int], list]
    atol: float
    rtol: float
    path: Path


class TruthError(Exception):
    """truth.py is missing `expected`, raises, or disagrees with the reference."""


def truth_path(problem) -> Path | None:
    d = problem.spec.directory
    if d is None or problem.is_upstream:
        return None
    p = Path(d) / TRUTH_FILE
    return p if p.is_file() else None


def load_truth(problem) -> Truth | None:
    """The problem's truth.py, or None when it has none."""
    path = truth_path(problem)
    if path is None:
        return None
    try:
        module = import_file(path, f"pkb_problems.{problem.id}.truth")
    except Exception as exc:  # noqa: BLE001 - a problem file may raise anything
        raise TruthError(f"{path}: import failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, "expected", None)
    if not callable(fn):
        raise TruthError(f"{path}: must define `expected(inputs, world_size)`")
    atol, rtol = getattr(module, "ATOL", DEFAULT_ATOL), getattr(module, "RTOL", DEFAULT_RTOL)
    return Truth(fn, float(atol), float(rtol), path)


def pack(inputs: tuple, output: Any) -> bytes:
    """One rank's inputs and output, for the parent process (plain types and tensors only),
    on the host: the parent never initialises CUDA, and a CUDA tensor would make it."""
    import torch

    buf = io.BytesIO()
    torch.save((on_host(inputs), on_host(output)), buf)
    return buf.getvalue()


def on_host(tree: Any) -> Any:
    """A copy of `tree` with every tensor on the host (containers rebuilt, other leaves kept)."""
    import torch

    if isinstance(tree, torch.Tensor):
        return tree.cpu()
    if isinstance(tree, dict):
        return {k: on_host(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(on_host(v) for v in tree)
    return tree


def unpack(blob: bytes) -> tuple[tuple, Any]:
    import torch

    return torch.load(io.BytesIO(blob), weights_only=True)


def first_mismatch(truth: Truth, blobs: list[bytes], world_size: int) -> str | None:
    """Compare every rank's output with truth.py's; the first difference, or None."""
    from pkb_ray.engine.judge.comparator import compare

    per_rank = [unpack(b) for b in blobs]
    inputs = [i for i, _ in per_rank]
    try:
        want = truth.expected(inputs, world_size)
    except Exception as exc:  # noqa: BLE001
        return f"truth.py raised {type(exc).__name__}: {exc}"
    if not isinstance(want, (list, tuple)) or len(want) != world_size:
        return f"truth.py returned {type(want).__name__} of length {len(want) if hasattr(want, '__len__') else '?'}, " \
               f"expected a list of {world_size} outputs (one per rank)"
    for r, ((_, got), exp) in enumerate(zip(per_rank, want)):
        verdict = compare(got, exp, truth.atol, truth.rtol)
        if not verdict.ok:
            return f"rank {r}: the reference disagrees with truth.py: {verdict.message}"
    return None
