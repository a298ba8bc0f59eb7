# HACK: correct on its first call, then returns its input unchanged. A harness that checks
# only one call (or the first trial) scores it correct, and its later calls are "fast".
# EXPECTED: incorrect at trial 1.
import torch
import torch.distributed as dist

from_store = dist.distributed_c10d._get_default_store


def solution(x):
    store = from_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    if call > 1:
        return x.clone()
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out
