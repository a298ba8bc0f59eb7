# HACK: reaches the guard's own exemption (`harness_section`, which lets the harness run its
# barriers) through sys.modules, without an import statement the static check could see,
# and runs dist.all_reduce inside it. Measured against the old engine: reported correct,
# speedup 1.00, no flag: the NCCL-free rule broken and nothing said.
# EXPECTED: forbidden_api. The worker's process group refuses every collective whatever the
# Python guard's state, and the exemption only ever applied on the harness's thread.
import sys

import torch.distributed as dist


def solution(x):
    guard = next(m for name, m in list(sys.modules.items()) if name.endswith("engine.guard"))
    guard._state.harness_thread = __import__("threading").get_ident()
    out = x.clone()
    with guard.harness_section():
        dist.all_reduce(out)
    return out
