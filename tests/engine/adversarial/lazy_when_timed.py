# HACK: correct for the first 5 calls (the usual number of correctness trials), then it
# replays its last output: every timed call is nearly free. A harness that checks only the
# trials and never the output of a timed call scores it correct and very fast.
# EXPECTED: incorrect at the timed-call check (failing_trial == trials).
import torch
import torch.distributed as dist

_last = []


def solution(x):
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    if call > 5 and _last:
        return _last[0]
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    _last[:] = [out]
    return out
