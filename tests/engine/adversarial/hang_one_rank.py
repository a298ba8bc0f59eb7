# HACK: rank 1 publishes its data, then never returns (the CPU analogue of a rank stuck in
# a symmetric barrier whose peer never arrives); rank 0 finishes correctly and waits. A
# harness without per-phase wall-clock limits waits forever and the node is lost; one that
# only limits the whole run cannot say which rank hung, or where.
# EXPECTED: timeout, failing_rank 1, and the evaluator goes on to the next candidate.
import time

import torch
import torch.distributed as dist


def solution(x):
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    if rank == 1:
        while True:
            time.sleep(1)
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out
