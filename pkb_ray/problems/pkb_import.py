"""Problems from an upstream ParallelKernelBench checkout (`problems.source=pkb:/path`).

Layout read (no upstream code is copied into this repo):

    <checkout>/reference/<N>_<name>.py          module-level `solution(*args)` using torch.distributed
    <checkout>/utils/input_output_tensors.py    create_input_tensor(rank, world_size, problem_id,
                                                                    base_shape, dtype, trial, device)

Each becomes a Problem with id `pkb_<N>_<name>`. Upstream publishes no tolerances, sizes or
roofline counts, so those are filled with our defaults: base_shape (1024, 1024) bfloat16 for
`bench` (upstream's default), a small float32 base_shape for `small` (gloo on CPU), and no
roofline (roofline_fn None).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Any

from pkb_ray.problems.loader import (
    ProblemLoadError,
    ProblemSet,
    files_version,
    import_file,
    unknown_id_error,
)
from pkb_ray.problems.spec import Problem, ProblemError, ProblemSpec

REFERENCE_RE = re.compile(r"^(\d+)_([A-Za-z0-9_]+)\.py$")
INPUTS_FILE = Path("utils") / "input_output_tensors.py"

PKB_WORLD_SIZES = (2, 4, 8)
PKB_SIZES: dict[str, dict[str, Any]] = {
    "small": {"base_shape": [16, 32], "dtype": "float32"},
    "bench": {"base_shape": [1024, 1024], "dtype": "bfloat16"},
}
# bf16 sums over up to 8 ranks (upstream's own checks are looser or absent)
PKB_ATOL = 3.0e-2
PKB_RTOL = 1.6e-2

# First match wins: specific workloads before the plain collectives they contain.
_CATEGORY_HINTS: tuple[tuple[str, str], ...] = (
    (r"moe|expert|dispatch|combine|deepep", "expert"),
    (r"attention|ring_attn|ulysses|context", "context"),
    (r"pipeline|p2p|send_recv|1f1b", "pipeline"),
    (r"vocab|cross_entropy|embedding|logit|topk|top_k", "vocab"),
    (r"fsdp|zero", "fsdp_zero"),
    (r"ddp|data_parallel|batch_?norm|grad", "data"),
    (r"gnn|graph|neighbor", "graph"),
    (r"halo|stencil|conv|spatial|splat|gaussian|fft", "geometric_spatial"),
    (r"sequence|layer_?norm|rms_?norm", "sequence"),
    (r"gemm|matmul|linear|mlp|tensor_parallel", "tensor"),
    (r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast", "collective"),
)


def infer_category(name: str) -> str:
    """A category from the upstream file name (`other` when nothing matches)."""
    low = name.lower()
    for pattern, category in _CATEGORY_HINTS:
        if re.search(pattern, low):
            return category
    return "other"


def load_pkb_problems(checkout: str, ids: list[str] | tuple[str, ...] | None = None) -> ProblemSet:
    """Every `reference/N_name.py` of an upstream checkout as a Problem (or a ProblemError)."""
    root = Path(checkout).expanduser().resolve()
    result = ProblemSet()
    ref_dir, inputs_path = root / "reference", root / INPUTS_FILE
    if not ref_dir.is_dir():
        result.errors.append(ProblemError("*", str(ref_dir), None, "not a PKB checkout: no reference/ directory"))
        return result
    found: dict[str, tuple[int, str, Path]] = {}
    for path in ref_dir.iterdir():
        m = REFERENCE_RE.match(path.name)
        if m:
            found[f"pkb_{int(m.group(1))}_{m.group(2)}"] = (int(m.group(1)), m.group(2), path)
    ordered = sorted(found, key=lambda pid: found[pid][0])
    wanted = ordered if not ids else list(ids)
    create = None
    create_error: ProblemError | None = None
    for pid in wanted:
        if pid not in found:
            result.errors.append(unknown_id_error(pid, ordered, str(ref_dir)))
            continue
        if create is None and create_error is None:
            create, create_error = _load_create_input_tensor(root, inputs_path)
        if create_error is not None:
            result.errors.append(ProblemError(pid, create_error.path, create_error.field, create_error.message))
            continue
        number, name, path = found[pid]
        try:
            result.problems[pid] = _load_one(root, pid, number, name, path, inputs_path, create)
        except ProblemLoadError as exc:
            result.errors.append(exc.error)
    return result


def _load_create_input_tensor(root: Path, inputs_path: Path):
    if not inputs_path.is_file():
        return None, ProblemError("*", str(inputs_path), None, "missing utils/input_output_tensors.py")
    _on_path(root)
    try:
        module = import_file(inputs_path, f"pkb_upstream_{_tag(root)}.input_output_tensors")
    except Exception as exc:  # noqa: BLE001 - upstream code may raise anything
        return None, ProblemError("*", str(inputs_path), None, f"import failed: {type(exc).__name__}: {exc}")
    fn = getattr(module, "create_input_tensor", None)
    if not callable(fn):
        return None, ProblemError("*", str(inputs_path), "create_input_tensor",
                                  "input_output_tensors.py must define create_input_tensor")
    return fn, None


def _load_one(root: Path, pid: str, number: int, name: str, path: Path, inputs_path: Path,
              create) -> Problem:
    _on_path(root)
    try:
        module = import_file(path, f"pkb_upstream_{_tag(root)}.reference_{number}_{name}")
    except Exception as exc:  # noqa: BLE001
        raise ProblemLoadError(ProblemError(pid, str(path), None,
                                            f"import failed: {type(exc).__name__}: {exc}")) from None
    if not callable(getattr(module, "solution", None)):
        raise ProblemLoadError(ProblemError(pid, str(path), "solution",
                                            f"{path.name} must define a module-level `solution(*args)`"))
    doc = (module.__doc__ or "").strip()
    title = doc.splitlines()[0] if doc else name.replace("_", " ")
    category = infer_category(name)
    spec = ProblemSpec(
        id=pid, title=title, category=category,
        origin="ParallelKernelBench (upstream checkout)",
        parallelism=category if category != "other" else "unspecified",
        world_sizes=PKB_WORLD_SIZES, dtype=PKB_SIZES["bench"]["dtype"],
        atol=PKB_ATOL, rtol=PKB_RTOL, sizes={k: dict(v) for k, v in PKB_SIZES.items()},
        description=doc or (f"Upstream ParallelKernelBench problem {number} ({name}): replace the "
                            f"reference `solution` with an implementation that computes the same outputs."),
        version=files_version([path, inputs_path]),
        directory=path.parent, source=f"pkb:{root}",
    )
    return Problem(
        spec=spec, solution=module.solution, reference_source=path.read_text(),
        make_inputs_fn=_InputMaker(create, number), roofline_fn=None,
        extra={"pkb_number": number, "pkb_file": str(path)},
    )


class _InputMaker:
    """make_inputs for an upstream problem: our seed is upstream's `trial`."""

    def __init__(self, create, number: int):
        self.create, self.number = create, number

    def __call__(self, rank: int, world_size: int, seed: int, size: dict[str, Any], device: str = "cpu"):
        import torch

        out = self.create(rank, world_size, self.number, tuple(size["base_shape"]),
                          getattr(torch, size["dtype"]), seed, device)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def _on_path(root: Path) -> None:
    # upstream references import their helpers as `from utils...`
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


def _tag(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:8]
