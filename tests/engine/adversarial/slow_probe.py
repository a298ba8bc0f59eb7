# HACK: honest in every call that is scored, slow on purpose in the calls that only size the
# batch. The timing phase first probes one call of each half on the trials' inputs
# (sampling.py sample_all: PROBES, then a warm-up, also on the trials' inputs), and sizes
# its batch from the slower half: k <= SAMPLE_MAX_MS / slowest. The candidate knows the
# trials' inputs (it saw them untimed) and sleeps 15 ms whenever it meets them again, so the
# probe reads 15 ms and k = 1. At one call per sample the reference's short calls pay, in
# every sample, for starting again after the judge stopped its worker (cpu: freezer.py)
# and whatever else the calibrated floor does not hold; the candidate's long calls do not
# notice. The reference read 3x slower per call than at the k the honest candidate got (0.97-
# 1.20 ms against 0.31-0.35 ms), and the speedup 2.3-3x higher, for code that never changed.
# (It pulls a speedup toward 1: a candidate slower than the reference gains, a faster one
# would ask for the largest k instead, by being fast in the probe.)
# A harness that lets the measured code choose how it is batched is fooled.
# EXPECTED: correct, and no faster than store_exchange.py (the same exchange, no sleep).
import time

import torch
import torch.distributed as dist

_seen = set()
_calls = [0]


def solution(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    key = hash(x.contiguous().cpu().numpy().tobytes())
    if _calls[0] <= 5:  # the trials: untimed, checked
        _seen.add(key)
    elif key in _seen:  # the trials' inputs again: probes and warm-up, never checked or scored
        time.sleep(0.015)
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    store.set(f"x/{call}/{rank}", x.contiguous().cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x)
    return out
