# HACK: keys a cache of outputs by a few sampled input elements and replays on a hit. Against
# a harness that rotates a fixed pool of input sets for timing (the usual cold-L2 trick), every
# timed call after the first pass over the pool is a "hit" that costs nothing.
# EXPECTED: never a hit: every timed call's contents are made for it alone, so the cache
# only ever misses and the candidate does its (slow, store-based) work honestly: correct,
# and not fast.
import torch
import torch.distributed as dist

_SEEN = {}


def _honest(x):
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x).to(x.device)
    return out


def solution(x):
    key = tuple(x.reshape(-1)[:: max(1, x.numel() // 8)][:8].tolist())
    if key in _SEEN:
        return _SEEN[key].clone()
    out = _honest(x)
    _SEEN[key] = out
    return out
