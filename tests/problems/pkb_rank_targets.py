"""Rank targets for the importer's tests (module-level: spawned ranks import them by name)."""

from __future__ import annotations

from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pkb_checkout"


def groups_of_two_input_sets(rank: int, world_size: int, port: int):
    """Two input sets of fixture 21 (a fresh dist.new_group in every create_input_tensor
    call, as upstream 22 and 55-57): whether they hold the same group, how many groups this
    rank gained (the loader's own probe made one first), and whether new_group is torch's
    own again after."""
    import os
    from datetime import timedelta

    import torch.distributed as dist

    from pkb_ray.problems import load_problem
    from pkb_ray.engine.judge.group import process_group_count as _process_groups

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=60))
    problem = load_problem(f"pkb:{FIXTURE}", "pkb_21_clip_grad_norm")
    before = _process_groups()
    a = problem.make_inputs(rank, world_size, 1, "small")
    b = problem.make_inputs(rank, world_size, 2, "small")
    return a[3] is b[3], _process_groups() - before, dist.new_group.__module__ == "torch.distributed.distributed_c10d"
