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
# EXPECTED: correct, with more than one call per sample: the batch follows the reference's
# probe, and a candidate's probe can only enlarge it.
import time

import torch

# pkb:include ../fixtures/candidates/store_exchange.py
_exchange = solution
_seen = set()
_calls = [0]


def solution(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    key = hash(x.contiguous().cpu().numpy().tobytes())
    if _calls[0] <= 5:  # the trials: untimed, checked
        _seen.add(key)
    elif key in _seen:  # the trials' inputs again: probes and warm-up, never checked or scored
        time.sleep(0.015)
    return _exchange(x)
