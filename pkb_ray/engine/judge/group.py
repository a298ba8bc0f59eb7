"""The judges' own process group: NCCL (cuda) or gloo (cpu) for the reference, and a gloo
group for the small gathers that keep the judges in step.

Judges agree after every step that involves their workers (`sync`): a judge whose worker
failed must not enter the next reference collective while the others do, or the group
deadlocks. The node's TCP store lives outside every sandbox.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch.distributed as dist


class JudgeGroup:
    def __init__(self, rank: int, world_size: int, device: str, store_port: int, timeout_s: float) -> None:
        self.rank, self.world_size = rank, world_size
        store = dist.TCPStore("127.0.0.1", store_port, world_size, False, timeout=timedelta(seconds=timeout_s))
        backend = "cuda:nccl,cpu:gloo" if device.startswith("cuda") else "gloo"
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=timeout_s))
        self.status = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout_s))

    def gather(self, obj: Any) -> list[Any]:
        """Every judge's `obj` (small, picklable; judges trust each other)."""
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj, group=self.status)
        return out

    def barrier(self) -> None:
        dist.barrier(group=self.status)
