"""The problem suite: what a problem is, how it is loaded, and the PKB importer.

Owns the problem format (spec.py), the loader of the built-in suite and of directories,
the PKB importer (pkb_import.py), the input trees and their checks (args.py), memory
estimates, `# pkb:include` expansion and `pkb problems list | coverage` (cli.py).

May import records and config only: the engine loads problems, and the suite's check
(pkb_ray/selfcheck) runs them, from above.
"""

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
