# HACK: reaches the guard's own exemption (`harness_section`, which lets the harness run its
# barriers) through sys.modules, without an import statement the static check could see,
# and runs dist.all_reduce inside it. Measured against the old engine: reported correct,
# speedup 1.00, no flag: the NCCL-free rule broken and nothing said.
# EXPECTED: a failure class, never correct. The worker runs no harness collective, so there
# is no exemption left to borrow (the lookup itself fails: runtime_error); and whatever the
# Python guard's state, the worker's process group cannot communicate (torch's fake backend:
# an all-reduce returns its input untouched).
import sys

import torch.distributed as dist


def solution(x):
    guard = next(m for name, m in list(sys.modules.items()) if name.startswith("pkb_ray") and name.endswith(".guard"))
    out = x.clone()
    section = getattr(guard, "harness_section", None)
    if section is None:  # no exemption here: try the collective anyway
        guard._state.installed = False
        dist.all_reduce(out)
        return out
    guard._state.harness_thread = __import__("threading").get_ident()
    with section():
        dist.all_reduce(out)
    return out
