"""The problem suite: the format (spec), the loader, the CPU checks and the PKB importer."""

from pkb_ray.problems.loader import (
    ProblemLoadError,
    ProblemSet,
    builtin_dir,
    load_problem,
    load_problems,
)
from pkb_ray.problems.memory import MemoryEstimate, ProblemTooLarge, estimate_inputs, require_fits
from pkb_ray.problems.spec import (
    CATEGORIES,
    SIZE_NAMES,
    Problem,
    ProblemError,
    ProblemSpec,
    RooflineCounts,
)

__all__ = [
    "CATEGORIES",
    "MemoryEstimate",
    "SIZE_NAMES",
    "Problem",
    "ProblemError",
    "ProblemLoadError",
    "ProblemSet",
    "ProblemSpec",
    "ProblemTooLarge",
    "RooflineCounts",
    "builtin_dir",
    "estimate_inputs",
    "load_problem",
    "load_problems",
    "require_fits",
]
