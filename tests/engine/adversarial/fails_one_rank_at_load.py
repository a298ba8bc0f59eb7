# HACK: rank 0 raises while its module loads; rank 1 loads cleanly, and its judge goes on to
# the reference's first call, a collective whose rank-0 side never comes. The node stops
# the sandboxes at rank 0's failure, and rank 1's judge sees its reference worker end. A
# harness that takes every fault of the reference worker for its own records harness_error:
# the cell is deferred and retried, and the failure never counts against the model.
# EXPECTED: runtime_error on rank 0 (the raise), never harness_error.
import torch
import torch.distributed as dist

if dist.get_rank() == 0:
    raise RuntimeError("rank 0 will not load")


def solution(x: torch.Tensor) -> torch.Tensor:  # rank 1's: the fixture's store exchange
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.contiguous().cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x)
    return out
