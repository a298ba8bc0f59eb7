"""Rank targets for the audit's tests (module-level: spawned ranks import them by name)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta


def _init_gloo(rank: int, world_size: int, port: int) -> None:
    import warnings

    import torch
    import torch.distributed as dist

    # torch 2.13 deprecates all_gather_into_tensor/reduce_scatter_tensor; references keep them
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=60))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def every_collective(x, w):
    """One of each kind of collective a reference uses, and a matmul: 16x8 fp32 tensors."""
    import torch
    import torch.distributed as dist
    from torch.distributed import _functional_collectives as funcol

    rank, world = dist.get_rank(), dist.get_world_size()
    y = x @ w                                                    # 2*16*8*8 flops
    dist.all_reduce(y)                                           # 2 (w-1)/w * 512 B
    gathered = torch.empty(16 * world, 8)
    dist.all_gather_into_tensor(gathered, y)                     # (w-1) * 512 B
    part = torch.empty(16 // world, 8)
    dist.reduce_scatter_tensor(part, y)                          # (w-1) * 512/w B
    # uneven all-to-all: rank r sends r+1 rows to every peer... of 16 rows: splits [4, 12]
    ins = [4, 12] if rank == 0 else [12, 4]
    outs = [4, 12] if rank == 0 else [12, 4]
    moved = torch.empty(16, 8)
    dist.all_to_all_single(moved, y, outs, ins)
    peer = (rank + 1) % world
    got = torch.empty(16, 8)
    ops = [dist.P2POp(dist.isend, y, peer), dist.P2POp(dist.irecv, got, (rank - 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    z = funcol.all_reduce(y, "sum", dist.group.WORLD)
    return (z + got).sum()


def count_every_collective(rank: int, world_size: int, port: int):
    import torch

    from pkb_ray.selfcheck.audit.ledger import count_call

    _init_gloo(rank, world_size, port)
    g = torch.Generator().manual_seed(rank)
    x, w = torch.randn(16, 8, generator=g), torch.randn(8, 8, generator=g)
    _, ledger = count_call(every_collective, (x, w), rank, world_size)
    return ledger


def count_subgroup_collectives(rank: int, world_size: int, port: int):
    """A size-1 subgroup's all-reduce (no traffic) and a world all-reduce, both through
    torch.distributed (c10d ops get the group boxed as a TorchScript object)."""
    import torch
    import torch.distributed as dist

    from pkb_ray.selfcheck.audit.ledger import count_call

    _init_gloo(rank, world_size, port)
    alone = [dist.new_group([r]) for r in range(world_size)]  # every rank creates every group

    def two_all_reduces(x):
        dist.all_reduce(x, group=alone[rank])
        dist.all_reduce(x)
        return x

    _, ledger = count_call(two_all_reduces, (torch.ones(16, 8),), rank, world_size)
    return ledger


def count_groups_made_per_call(rank: int, world_size: int, port: int):
    """Two calls of a reference that makes a group of every rank and one of its own in each
    call (upstream 48's shape), then one of a reference that makes none."""
    import torch
    import torch.distributed as dist

    from pkb_ray.selfcheck.audit.ledger import count_call

    _init_gloo(rank, world_size, port)

    def groups_inside(x):
        world = dist.new_group(list(range(world_size)))
        alone = [dist.new_group([r]) for r in range(world_size)][rank]
        dist.all_reduce(x, group=world)
        dist.all_reduce(x, group=alone)
        return x

    made = [count_call(groups_inside, (torch.ones(4),), rank, world_size)[1].groups_made for _ in range(2)]
    made.append(count_call(lambda x: x * 2, (torch.ones(4),), rank, world_size)[1].groups_made)
    return made
