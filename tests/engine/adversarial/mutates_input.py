# HACK: computes the sum into its input buffer and returns the input itself: no allocation
# and no copy, and a harness that compares only outputs is satisfied. But the caller's data
# is destroyed, and a harness that reuses inputs now feeds the next call a pre-summed tensor.
# EXPECTED: incorrect ("modified its input"): every input is checked bit for bit after every
# call against the judge's own copy.
import torch
import torch.distributed as dist


def solution(x):
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    for r in range(world):
        if r != rank:
            x += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return x
