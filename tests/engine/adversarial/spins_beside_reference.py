# HACK: answers honestly, but leaves a process of its own spinning whenever its call is not
# running: on cpu that is while the reference's half is timed. Both workers' ranks share every
# core at one scheduling class there (engine/cpu_pins.py), so the spinner takes cores from
# the reference at equal weight, the reference reads slower and the candidate faster; its own
# half loses nothing, since the spinner waits while the call runs. A harness that leaves the
# candidate's processes running between its halves (this one before judge/freezer.py) scores
# it faster than the same code without the spinner.
# EXPECTED: correct, and no faster than store_exchange.py (the same exchange, no spinner):
# the judge stops the rank and its children while the reference's half runs, and the rank
# cannot resume them (SIGCONT is refused by the filter).
import mmap
import os
import time

import torch
import torch.distributed as dist

_flag = mmap.mmap(-1, 1)  # shared with the child: 1 while a call runs


def _spin() -> None:
    while True:
        if _flag[0] == 1:
            time.sleep(0.0002)  # out of its own call's way


if os.fork() == 0:
    try:
        _spin()
    finally:
        os._exit(0)


def solution(x: torch.Tensor) -> torch.Tensor:
    _flag[0] = 1
    try:
        store = dist.distributed_c10d._get_default_store()
        rank, world = dist.get_rank(), dist.get_world_size()
        call = store.add(f"calls/{rank}", 1)
        store.set(f"x/{call}/{rank}", x.contiguous().cpu().numpy().tobytes())
        out = x.clone()
        for r in range(world):
            if r != rank:
                peer = torch.frombuffer(bytearray(store.get(f"x/{call}/{r}")), dtype=x.dtype)
                out += peer.view_as(x)
        return out
    finally:
        _flag[0] = 0
