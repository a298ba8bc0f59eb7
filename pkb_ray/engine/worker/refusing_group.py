"""The worker's default process group: it exists (symmetric memory rendezvous and
`dist.get_rank()` need one) but every collective on it refuses.

NCCL-free by construction: a candidate that calls a collective through torch.distributed,
through the ProcessGroup object, or through torch.ops.c10d reaches this group and gets an
error, whatever it did to the Python-level guard. Symmetric memory needs only the group's
store, which it gets through `set_group_info` (what torch does for its own groups).
"""

from __future__ import annotations

import warnings
from datetime import timedelta

import torch.distributed as dist

from pkb_ray.engine.wire.messages import REFUSAL

BACKEND = "pkb_refuse"


class RefusingGroup(dist.ProcessGroup):
    """Every collective raises; methods not defined here have no backend and fail too."""

    @property
    def group_name(self) -> str:  # torch sets the name on its own class, not on a Python subclass
        return "0"

    def getBackendName(self) -> str:  # noqa: N802 - torch's name
        return BACKEND

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError(REFUSAL)

    allreduce = allreduce_coalesced = allgather = allgather_coalesced = _refuse
    allgather_into_tensor_coalesced = _allgather_base = reduce_scatter = _reduce_scatter_base = _refuse
    reduce_scatter_tensor_coalesced = alltoall = alltoall_base = broadcast = reduce = _refuse
    gather = scatter = send = recv = recv_anysource = barrier = monitored_barrier = _refuse


def _create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> RefusingGroup:
    return RefusingGroup(rank, size)


def init(store: dist.Store, rank: int, world_size: int, timeout_s: float) -> None:
    """Make the refusing group the default group and give symmetric memory its store."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])
    dist.init_process_group(BACKEND, store=store, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))
    try:
        import torch.distributed._symmetric_memory as symm
    except ImportError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in torch 2.13, still what sets the store
        enable = getattr(symm, "enable_symm_mem_for_group", None)
        if enable is not None:
            enable("0")
