"""The judges' own process group: NCCL (cuda) or gloo (cpu) for the reference, and a gloo
group for the small gathers that keep the judges in step.

Judges agree after every step that involves their workers (`sync`): a judge whose worker
failed must not enter the next reference collective while the others do, or the group
deadlocks. The node's TCP store lives outside every sandbox.

Two timeouts, because the two groups wait for different things:
- the default group carries only the reference's own collectives, which take milliseconds
  at our sizes; REFERENCE_TIMEOUT_S turns judges out of step (a reference whose ranks take
  different paths) into an error in seconds, where the group's timeout would let one hang
  for 10 minutes (gnn_distributed_neighbor_sampling's reference does);
- the `status` group waits for every judge's worker to finish a phase, so it keeps the
  caller's `timeout_s` (the node passes its group_timeout_s, as long as a phase may last),
  and so does the store (it waits for the slowest judge to start).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch.distributed as dist

REFERENCE_TIMEOUT_S = 30.0
"""Longest wait of one reference collective. The slowest reference call at bench size takes
7.5 ms (fft2d_transpose, 2 x H200; 119 reference timings, all under 8 ms), a small-size call
on CPU milliseconds, and NCCL's communicator set-up on a group's first call 1-2 s: 30 s is
over 10x the longest of these, and 20x shorter than the node's 600 s group timeout."""


class JudgeGroup:
    def __init__(self, rank: int, world_size: int, device: str, store_port: int, timeout_s: float,
                 reference_timeout_s: float = REFERENCE_TIMEOUT_S) -> None:
        self.rank, self.world_size = rank, world_size
        store = dist.TCPStore("127.0.0.1", store_port, world_size, False, timeout=timedelta(seconds=timeout_s))
        backend = "cuda:nccl,cpu:gloo" if device.startswith("cuda") else "gloo"
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=min(timeout_s, reference_timeout_s)))
        self.status = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout_s))

    def gather(self, obj: Any) -> list[Any]:
        """Every judge's `obj` (small, picklable; judges trust each other)."""
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj, group=self.status)
        return out

    def barrier(self) -> None:
        dist.barrier(group=self.status)

    def close(self) -> None:
        """Leave both groups before the node drops the store: a group left to the
        interpreter's exit outlived its store, and its NCCL watchdog printed a TCPStore
        traceback per judge at every teardown."""
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - already gone (a peer's exit aborted it): nothing to leave
            pass


def process_group_count() -> int:
    """How many process groups this process is in. torch.distributed keeps no public count:
    its registry of groups (pg_map) is private, and read only here; 0 where it is missing.
    Counting calls to dist.new_group instead would miss `from torch.distributed import
    new_group` and new_subgroups."""
    if not dist.is_available() or not dist.is_initialized():
        return 0
    world = getattr(dist.distributed_c10d, "_world", None)
    return len(getattr(world, "pg_map", ()) or ())
