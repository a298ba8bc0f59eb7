# HACK: honest in its trials, then makes the judge fail at its first timed call: the
# worker's own report of its time (Done.event_ms) is typed `float`, and the type check
# lets a JSON int through (an int is a float there). An int of 400 digits is valid JSON,
# passes the check, and float() of it raises OverflowError in the judge (session.run_timed),
# which the timing phase takes for its own bug: harness_error, which is deferred and
# retried, never recorded as the candidate's. Whatever the candidate would have been caught
# at in the timing phase (a replay after the trials, a slow figure) is never scored.
# A harness that converts a number from the worker without bounding it is fooled.
# EXPECTED: runtime_error (the worker broke the protocol), never harness_error.
import sys

import torch
import torch.distributed as dist

_rank_module = sys.modules["pkb_ray.engine.worker.rank"]
_run_calls = _rank_module.run_calls


def _run_calls_that_overflow(fn, calls, arena, device, *, timed, **kw):
    res = _run_calls(fn, calls, arena, device, timed=timed, **kw)
    if timed:
        res.event_ms = 10 ** 400  # JSON: a 401-digit int; float() of it: OverflowError
    return res


_rank_module.run_calls = _run_calls_that_overflow

_last = []


def solution(x: torch.Tensor) -> torch.Tensor:
    # Honest for the trials (exchange through the store), then a replay of its last output:
    # every timed call would be wrong, and the secret checks would say so.
    store = dist.distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"calls/{rank}", 1)
    if call > 5 and _last:
        return _last[0]
    store.set(f"x/{call}/{rank}", x.contiguous().cpu().numpy().tobytes())
    out = x.clone()
    for r in range(world):
        if r != rank:
            out += torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype).view_as(x)
    _last[:] = [out]
    return out
