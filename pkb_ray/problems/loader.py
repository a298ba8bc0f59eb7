"""Load and validate problems: builtin (this repo's problems/), a directory, or a PKB checkout.

Every problem loads on its own: a malformed one becomes a ProblemError naming its file and
field, and the others still load (a sweep over 32 problems must not die on one typo).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

import pkb_ray
from pkb_ray.problems.common import (
    ProblemLoadError,
    ProblemSet,
    files_version,
    import_file,
    unknown_id_error,
)
from pkb_ray.problems.includes import IncludeError, read_candidate_file, read_expanded_bytes
from pkb_ray.problems.pkb_import import load_pkb_problems
from pkb_ray.problems.spec import CATEGORIES, SIZE_NAMES, Problem, ProblemError, ProblemSpec

PROBLEM_FILES = ("problem.yaml", "reference.py", "inputs.py")
"""The files whose bytes make a problem's version (expert.py is a candidate, not the problem),
with their `# pkb:include` lines expanded (includes.read_expanded_bytes)."""

# The world sizes a problem may also be run at when asked for (test_world_sizes) change no
# result: the line stays out of the version, or declaring it would re-key every cached model
# response and recorded cell of the problem (the version is part of both keys).
# (the flow form `test_world_sizes: [1]`, or a block list under the key)
UNVERSIONED_YAML = re.compile(rb"^test_world_sizes:[^\n]*(?:\n[ \t]*-[^\n]*)*\n?", re.MULTILINE)

PKB_PREFIX = "pkb:"

# torch dtype names a problem may declare; checked here so a typo fails at load, not on a GPU.
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32")

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "title": str,
    "category": str,
    "origin": str,
    "parallelism": str,
    "world_sizes": list,
    "dtype": str,
    "atol": (int, float),
    "rtol": (int, float),
    "sizes": dict,
    "description": str,
}
# Optional fields: name -> type. `upstream` lists the upstream PKB problem ids (1-87) that
# compute the same thing; `upstream_partial` those it resembles without computing the same
# thing (`pkb problems coverage` shows them, but they do not count as covered); `tolerance_reason` says where atol/rtol come from (dtype, the
# reduction order), so a reader can judge them; `test_world_sizes` the world sizes run only
# when asked for (ProblemSpec.test_world_sizes); `ranked_outputs` the [values, ids] output
# pairs that are a top-k (ProblemSpec.ranked_outputs).
_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "upstream": list,
    "upstream_partial": list,
    "tolerance_reason": str,
    "test_world_sizes": list,
    "ranked_outputs": list,
}
UPSTREAM_IDS = range(1, 88)

__all__ = ["ProblemLoadError", "ProblemSet", "builtin_dir", "load_problem", "load_problem_dir",
           "load_problems", "validate_meta"]


def builtin_dir() -> Path:
    """The repo's problems/ directory (next to the pkb_ray package)."""
    return Path(pkb_ray.__file__).resolve().parents[1] / "problems"


def load_problems(source: str = "builtin", ids: list[str] | tuple[str, ...] | None = None) -> ProblemSet:
    """Load every problem of `source` (or only `ids`); never raises for one bad problem."""
    if source.startswith(PKB_PREFIX):
        return load_pkb_problems(source[len(PKB_PREFIX):], ids)
    root = builtin_dir() if source == "builtin" else Path(source).expanduser()
    result = ProblemSet()
    if not root.is_dir():
        result.errors.append(ProblemError("*", str(root), None, f"problems source {source!r} is not a directory"))
        return result
    dirs = {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and (p / "problem.yaml").exists()}
    # a directory with problem files but no problem.yaml is a broken problem, not a stray folder
    half = [p for p in sorted(root.iterdir()) if p.is_dir() and p.name not in dirs
            and any((p / f).exists() for f in PROBLEM_FILES[1:])]
    wanted = list(dirs) if not ids else list(ids)
    if not ids:
        for p in half:
            result.errors.append(ProblemError(p.name, str(p / "problem.yaml"), None, "missing problem.yaml"))
    for pid in wanted:
        if pid not in dirs:
            result.errors.append(unknown_id_error(pid, list(dirs), str(root)))
            continue
        try:
            problem = load_problem_dir(dirs[pid], source=source)
        except ProblemLoadError as exc:
            result.errors.append(exc.error)
            continue
        result.problems[problem.id] = problem
    return result


def load_problem(source: str, problem_id: str) -> Problem:
    """One problem by id; raises ProblemLoadError (carrying a ProblemError) if it cannot load."""
    loaded = load_problems(source, [problem_id])
    if problem_id in loaded.problems:
        return loaded.problems[problem_id]
    raise ProblemLoadError(loaded.errors[0] if loaded.errors else
                           ProblemError(problem_id, source, None, "not found"))


def load_problem_dir(directory: Path, source: str = "builtin") -> Problem:
    """Load and validate one problem directory; raises ProblemLoadError naming file and field."""
    pid = directory.name
    yaml_path = directory / "problem.yaml"

    def fail(path: Path, fld: str | None, msg: str) -> ProblemLoadError:
        return ProblemLoadError(ProblemError(pid, str(path), fld, msg))

    try:
        meta = yaml.safe_load(yaml_path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise fail(yaml_path, None, f"cannot read YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise fail(yaml_path, None, "expected a mapping at the top level")
    spec_kwargs = validate_meta(meta, pid, lambda fld, msg: fail(yaml_path, fld, msg))

    for name in ("reference.py", "inputs.py"):
        if not (directory / name).is_file():
            raise fail(directory / name, None, f"missing {name}")
    modules: dict[str, ModuleType] = {}
    for name in ("reference.py", "inputs.py"):
        try:
            modules[name] = import_file(directory / name, f"pkb_problems.{pid}.{name[:-3]}")
        except BaseException as exc:  # a problem file may raise anything at import
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise fail(directory / name, None, f"import failed: {type(exc).__name__}: {exc}") from None
    ref, inp = modules["reference.py"], modules["inputs.py"]
    for module, fname, path in ((ref, "solution", "reference.py"), (inp, "make_inputs", "inputs.py"),
                                (inp, "roofline", "inputs.py")):
        if not callable(getattr(module, fname, None)):
            raise fail(directory / path, fname, f"{path} must define a function `{fname}`")

    try:
        version = files_version([directory / n for n in PROBLEM_FILES], UNVERSIONED_YAML, read_expanded_bytes)
        reference_source = read_candidate_file(directory / "reference.py")
    except IncludeError as exc:
        raise fail(directory / "reference.py", None, str(exc)) from exc
    spec = ProblemSpec(**spec_kwargs, version=version, directory=directory, source=source)
    expert = directory / "expert.py"
    try:
        expert_source = read_candidate_file(expert) if expert.is_file() else None
    except IncludeError as exc:
        raise fail(expert, "expert.py", str(exc)) from exc
    problem = Problem(
        spec=spec,
        solution=ref.solution,
        reference_source=reference_source,
        make_inputs_fn=inp.make_inputs,
        roofline_fn=inp.roofline,
        expert_source=expert_source,
    )
    # The roofline is cheap arithmetic: evaluate it now so a bad formula fails at load time.
    for size in SIZE_NAMES:
        try:
            counts = problem.roofline(max(spec.world_sizes), size)
        except Exception as exc:
            raise fail(directory / "inputs.py", "roofline",
                       f"roofline({max(spec.world_sizes)}, sizes.{size}) failed: {type(exc).__name__}: {exc}") from None
        for k, v in vars(counts).items():
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise fail(directory / "inputs.py", "roofline", f"{k}={v!r} is not a finite count >= 0")
    return problem


def validate_meta(meta: dict[str, Any], pid: str, fail) -> dict[str, Any]:
    """Check problem.yaml's fields; returns ProblemSpec kwargs. `fail(field, msg)` builds the error."""
    for key, typ in _REQUIRED.items():
        if key not in meta:
            raise fail(key, "missing required field")
        value = meta[key]
        if not isinstance(value, typ) or isinstance(value, bool):
            want = typ.__name__ if isinstance(typ, type) else "number"
            raise fail(key, f"expected {want}, got {type(value).__name__} {value!r}")
    unknown = sorted(set(meta) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise fail(unknown[0], f"unknown field(s) {unknown}; allowed: {sorted({*_REQUIRED, *_OPTIONAL})}")
    for key, typ in _OPTIONAL.items():
        if key in meta and not isinstance(meta[key], typ):
            raise fail(key, f"expected {typ.__name__}, got {type(meta[key]).__name__} {meta[key]!r}")
    for key in ("upstream", "upstream_partial"):
        bad = [u for u in meta.get(key, [])
               if not (isinstance(u, int) and not isinstance(u, bool) and u in UPSTREAM_IDS)]
        if bad:
            raise fail(key, f"expected upstream PKB problem ids 1-87, got {bad!r}")
    upstream = meta.get("upstream", [])
    both = sorted(set(upstream) & set(meta.get("upstream_partial", [])))
    if both:
        raise fail("upstream_partial", f"{both} also in `upstream`: a problem covers an id or resembles it, not both")
    if meta["id"] != pid:
        raise fail("id", f"id {meta['id']!r} must equal the directory name {pid!r}")
    if meta["category"] not in CATEGORIES:
        raise fail("category", f"{meta['category']!r} is not one of {list(CATEGORIES)}")
    ws = meta["world_sizes"]
    if not ws or not all(isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in ws):
        raise fail("world_sizes", f"expected a non-empty list of positive ints, got {ws!r}")
    tws = meta.get("test_world_sizes", [])
    if not all(isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in tws):
        raise fail("test_world_sizes", f"expected a list of positive ints, got {tws!r}")
    if set(tws) & set(ws):
        raise fail("test_world_sizes", f"{sorted(set(tws) & set(ws))} also in `world_sizes`: a world size is "
                   "either swept or for tests, not both")
    if meta["dtype"] not in DTYPES:
        raise fail("dtype", f"{meta['dtype']!r} is not one of {list(DTYPES)}")
    for tol in ("atol", "rtol"):
        if not meta[tol] >= 0:
            raise fail(tol, f"must be >= 0, got {meta[tol]!r}")
    sizes = meta["sizes"]
    for name in SIZE_NAMES:
        if not isinstance(sizes.get(name), dict):
            raise fail(f"sizes.{name}", "missing (every problem needs `small` and `bench` size mappings)")
        dt = sizes[name].get("dtype")
        if dt is not None and dt not in DTYPES:
            raise fail(f"sizes.{name}.dtype", f"{dt!r} is not one of {list(DTYPES)}")
    if not meta["description"].strip():
        raise fail("description", "must not be empty")
    ranked = meta.get("ranked_outputs", [])
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                          for i in p) and p[0] != p[1] for p in ranked):
        raise fail("ranked_outputs", f"expected a list of [values, ids] output positions, got {ranked!r}")
    if len({ids for _, ids in ranked}) != len(ranked):
        raise fail("ranked_outputs", f"an ids output is ranked by one values output only, got {ranked!r}")
    return dict(
        id=meta["id"], title=meta["title"], category=meta["category"], origin=meta["origin"],
        parallelism=meta["parallelism"], world_sizes=tuple(ws), test_world_sizes=tuple(tws),
        dtype=meta["dtype"],
        atol=float(meta["atol"]), rtol=float(meta["rtol"]),
        # Each size carries its dtype (the problem's unless the size overrides it: small sizes
        # use float32 because gloo on CPU), so make_inputs and roofline read size["dtype"].
        sizes={name: {"dtype": meta["dtype"], **dict(sizes[name])} for name in sizes},
        description=meta["description"].strip(),
        upstream=tuple(upstream),
        upstream_partial=tuple(meta.get("upstream_partial", [])),
        tolerance_reason=meta.get("tolerance_reason", "").strip(),
        ranked_outputs=tuple((int(v), int(i)) for v, i in ranked),
    )
