# HACK: right on rank 0, wrong on rank 1. A harness that checks only rank 0's output (as
# many single-output harnesses do) scores it correct.
# EXPECTED: incorrect, failing_rank 1.
import torch
import torch.distributed as dist


def solution(x):
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    if rank == 1:
        out[::7] += 0.5
    return out
