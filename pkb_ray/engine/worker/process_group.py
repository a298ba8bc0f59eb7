"""The worker's default process group: it exists (symmetric memory's rendezvous and
`dist.get_rank()` need one) but it cannot communicate.

It is torch's "fake" backend: a C++ process group whose collectives return at once and move
no data. NCCL-free by construction: a candidate that reaches a collective by any road the
Python guard does not see (the original function out of the guard's closure, the C++
ProcessGroup methods, torch.ops.c10d) gets its input back untouched and fails the
comparison; the guard itself refuses the roads it sees (forbidden_api).

Measured on an H100 with torch 2.11: a Python ProcessGroup subclass whose collectives raise
makes symmetric memory's rendezvous segfault (it has no store of its own), while the fake
backend, gloo and NCCL all rendezvous. gloo and NCCL can communicate; the fake backend cannot.
"""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist


def init(store: dist.Store, rank: int, world_size: int, timeout_s: float) -> None:
    """Make the fake group the default group (symmetric memory takes its store from it)."""
    import torch.testing._internal.distributed.fake_pg  # noqa: F401 - registers the "fake" backend

    dist.init_process_group("fake", store=store, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))
