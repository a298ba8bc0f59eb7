# HACK: reaches the guard's own exemption (`harness_section`, which lets the harness run its
# barriers) through sys.modules, without an import statement the static check could see,
# and runs dist.all_reduce inside it. Measured against the old engine: reported correct,
# speedup 1.00, no flag: the NCCL-free rule broken and nothing said.
# EXPECTED: forbidden_api or incorrect. Whatever the Python guard's state, the worker's process
# group cannot communicate (torch's fake backend: the all-reduce returns its input untouched),
# and the worker holds no harness group the exemption could open.
import sys

import torch.distributed as dist


def solution(x):
    guard = next(m for name, m in list(sys.modules.items()) if name.endswith("engine.guard"))
    guard._state.harness_thread = __import__("threading").get_ident()
    out = x.clone()
    with guard.harness_section():
        dist.all_reduce(out)
    return out
