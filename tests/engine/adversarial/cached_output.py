# HACK: computes the answer once and replays it from a module-level cache on every later
# call (upstream PKB's harness scored such a replay 2.5x to 9.8x "faster"). It passes any
# harness that reuses the same inputs for every trial or checks only the first call.
# EXPECTED: incorrect (fresh inputs per trial), flagged module_level_state.
import torch
import torch.distributed as dist

_CACHE = {}


def solution(x):
    if "out" in _CACHE:
        return _CACHE["out"]
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    store.set(f"cached/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"cached/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    _CACHE["out"] = out
    return out
