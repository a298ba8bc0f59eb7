"""The process groups a problem's arguments name, made in the worker ({"G": ranks} on the
wire, wire/trees.py): upstream PKB problems pass groups as arguments (upstream 21 and 22,
gradient clipping over FSDP and EP groups; 55-57, ring attention over TP, PP and DP groups).

The judge's groups live in the judge; a worker gets the same ranks and makes its own group
of them once, then hands that one to every call (a new group per call would build a
communicator per call). Only the members make it (`use_local_synchronization`): each rank's
arguments name the groups that rank is in, not every rank's. A group of every rank is the
worker's default group. A rank named in no group it is handed gets NON_GROUP_MEMBER, as
upstream's own new_group() returns to a non-member.

The group's backend is the worker's default group's: NCCL in a reference's worker, the fake
backend in a candidate's (worker/process_group.py), which cannot communicate. `_new_group`
is torch's own, taken when this module is imported (rank.py, before the guard wraps it):
with it a candidate can make groups, as it could with backend="gloo" through the guard, and
none that moves data, since the candidate's worker has no NCCL (the stub) and no socket.
"""

from __future__ import annotations

from typing import Any

import torch.distributed as dist

_new_group = dist.new_group
_made: dict[tuple[int, ...], Any] = {}


def group_for(ranks: list[int]) -> Any:
    key = tuple(ranks)
    if key not in _made:
        world = dist.get_world_size()
        if any(not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < world for r in key) \
                or len(set(key)) != len(key):
            raise ValueError(f"a process group of ranks {list(key)} in a world of {world}")
        if sorted(key) == list(range(world)):
            _made[key] = dist.group.WORLD
        elif dist.get_rank() not in key:
            _made[key] = dist.GroupMember.NON_GROUP_MEMBER
        else:
            _made[key] = _new_group(list(key), use_local_synchronization=True)
    return _made[key]
