# HACK: makes time.perf_counter run 1000x slower than real time, so a harness that reads
# the clock through the time module measures every call as ~1000x faster. The work itself
# is correct (store exchange).
# EXPECTED: correct, flagged patches_timer, and its time unaffected (the harness bound its
# clock before importing the candidate).
import time

import torch
import torch.distributed as dist

_real = time.perf_counter
_t0 = _real()
time.perf_counter = lambda: _t0 + (_real() - _t0) / 1000.0


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
