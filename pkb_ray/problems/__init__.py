"""The problem suite: the format (spec), the loader, the CPU checks and the PKB importer."""

from pkb_ray.problems.loader import (
    ProblemLoadError,
    ProblemSet,
    builtin_dir,
    load_problem,
    load_problems,
)
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
    "SIZE_NAMES",
    "Problem",
    "ProblemError",
    "ProblemLoadError",
    "ProblemSet",
    "ProblemSpec",
    "RooflineCounts",
    "builtin_dir",
    "load_problem",
    "load_problems",
]
