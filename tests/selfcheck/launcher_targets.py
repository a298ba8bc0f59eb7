"""Rank targets for test_launcher.py: module-level (spawned ranks import them by name), and
light (no torch) so a group starts in well under a second."""

from __future__ import annotations

import os
import time

from pkb_ray.selfcheck.launcher import send


def echo(rank: int, world_size: int, n: int) -> dict:
    for i in range(n):
        send((rank, i))
    return {"rank": rank, "world_size": world_size, "pid": os.getpid()}


def big(rank: int, world_size: int, nbytes: int) -> bytes:
    # larger than a pipe's buffer (64 KiB): the parent must read while the rank writes
    return bytes([rank]) * nbytes


def rank1_raises(rank: int, world_size: int) -> int:
    if rank == 1:
        raise ValueError("bad shard")
    return rank


def rank1_exits(rank: int, world_size: int) -> int:
    if rank == 1:
        os._exit(3)  # as a reference calling sys.exit or crashing in C would
    return rank


def rank1_hangs(rank: int, world_size: int) -> int:
    if rank == 1:
        time.sleep(600)
    return rank
