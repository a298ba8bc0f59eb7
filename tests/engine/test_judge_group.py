"""The judges' process group: a reference collective waits seconds, a judge-status gather as
long as the node allows (engine/judge/group.py).

Two real judge-group ranks (gloo, CPU) on a TCP store held by the test, as the node holds
it. A reference collective that one judge never joins must fail at the short reference
timeout, not hang for the node's group timeout (the judges hung 600 s on
gnn_distributed_neighbor_sampling, issue 23); a status gather must still wait past it,
because there a judge waits for the others' workers.
"""

from __future__ import annotations

import time
from datetime import timedelta

import torch.distributed as dist

from pkb_ray.engine.judge.group import REFERENCE_TIMEOUT_S
from pkb_ray.selfcheck.launcher import run_ranks

REFERENCE_S = 2.0
"""The reference timeout the test sets (the default, REFERENCE_TIMEOUT_S, would cost 30 s)."""
STATUS_S = 60.0
"""The status group's timeout, as the node passes it (600 s there)."""
LATE_S = 4.0
"""How late rank 1 joins the status gather: past REFERENCE_S, well within STATUS_S."""


def _judge(rank: int, world_size: int, port: int) -> dict:
    from pkb_ray.engine.judge.group import JudgeGroup

    group = JudgeGroup(rank, world_size, "cpu", port, STATUS_S, reference_timeout_s=REFERENCE_S)
    if rank == 1:
        time.sleep(LATE_S)
    t0 = time.monotonic()
    gathered = group.gather(rank * 10)
    out = {"gathered": gathered, "gather_s": time.monotonic() - t0}
    if rank == 0:
        # a reference collective rank 1 never joins (its reference took another path)
        import torch

        t0 = time.monotonic()
        try:
            dist.all_reduce(torch.ones(4))
            out["reference_error"] = ""
        except RuntimeError as exc:
            out["reference_error"] = str(exc)[:300]
        out["reference_s"] = time.monotonic() - t0
    group.barrier()  # on the status group: rank 1 waits here while rank 0's collective times out
    return out


def test_reference_collective_times_out_in_seconds_status_gather_waits():
    store = dist.TCPStore("127.0.0.1", 0, 2, True, timeout=timedelta(seconds=STATUS_S), wait_for_workers=False)
    result = run_ranks(_judge, 2, (store.port,), timeout_s=STATUS_S + 60)
    assert result.ok, result.why()
    r0, r1 = result.returned[0], result.returned[1]
    assert r0["gathered"] == r1["gathered"] == [0, 10]
    assert r0["gather_s"] >= LATE_S - 0.5  # rank 0 waited for the late judge, past REFERENCE_S
    assert r0["reference_error"], "a collective one judge never joined returned"
    # it ended by the reference timeout, long before the status group's would have fired
    assert REFERENCE_S - 0.5 <= r0["reference_s"] < STATUS_S / 2, r0


def test_default_reference_timeout_is_seconds():
    # the node passes 600 s as the group timeout; a reference collective must not wait that long
    assert 5.0 <= REFERENCE_TIMEOUT_S <= 60.0
