# HACK: the strongest timer patch there is from inside the worker: it finds the harness's own
# timing module through sys.modules and replaces the clock it bound at import with one that
# runs 1000 x slower, then does honest (store-based) work. Every time the worker reports is
# now 1000 x too small; a harness that believes its worker's report is fooled.
# EXPECTED: correct, flagged worker_clock_disagrees, and its time what honest work costs: the
# judge's own clock (inputs handed over -> answer) times both halves; a worker's report is
# evidence against it, never a figure.
import sys
import time

import torch
import torch.distributed as dist

_real = time.perf_counter
_t0 = _real()
for name, mod in list(sys.modules.items()):
    if name.startswith("pkb_ray.engine.worker") and hasattr(mod, "_perf_counter"):
        mod._perf_counter = lambda: _t0 + (_real() - _t0) / 1000.0


def solution(x):
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out
