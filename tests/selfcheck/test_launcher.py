"""The rank launcher with real spawned processes: values, failures, exits and timeouts
come back as typed events naming the rank."""

from __future__ import annotations

import os

import pytest

from pkb_ray.selfcheck.launcher import RankFailed, RankGroup, RankSent, run_ranks, send

from . import launcher_targets as t


def test_every_rank_returns_and_sends_in_order():
    res = run_ranks(t.echo, 3, (4,), timeout_s=120)
    assert res.ok and res.why() == ""
    assert {r: v["rank"] for r, v in res.returned.items()} == {0: 0, 1: 1, 2: 2}
    assert all(v["world_size"] == 3 and v["pid"] != os.getpid() for v in res.returned.values())
    for rank in range(3):  # each rank's values in the order it sent them
        assert [e.value for e in res.sent if e.rank == rank] == [(rank, i) for i in range(4)]
    assert res.exitcodes == {0: 0, 1: 0, 2: 0}


def test_payloads_larger_than_a_pipe_buffer_arrive_whole():
    res = run_ranks(t.big, 2, (8 << 20,), timeout_s=120)
    assert res.ok and res.returned[1] == b"\x01" * (8 << 20)


def test_an_exception_names_the_rank_and_the_line():
    res = run_ranks(t.rank1_raises, 2, timeout_s=120)
    assert not res.ok and res.returned == {0: 0}
    assert res.why().startswith("rank 1: ValueError: bad shard at launcher_targets.py:")
    assert isinstance(res.failures[0], RankFailed) and "rank1_raises" in res.failures[0].traceback
    assert res.exitcodes[1] == 1


def test_a_rank_that_exits_without_returning_is_named():
    res = run_ranks(t.rank1_exits, 2, timeout_s=120)
    assert not res.ok and not res.failures and res.returned == {0: 0}
    assert res.why() == "rank 1 exited with code 3 without returning"


def test_a_hung_rank_is_killed_at_the_timeout():
    res = run_ranks(t.rank1_hangs, 2, timeout_s=8)
    assert res.timed_out and res.killed == [1] and res.returned == {0: 0}
    assert "rank(s) [1] still running (killed)" in res.why()
    assert res.exitcodes[1] is not None and res.exitcodes[1] < 0  # killed by a signal


def test_a_group_streams_events_and_kill_reaps_every_rank():
    with RankGroup(t.rank1_hangs, 2) as g:
        seen = []
        while not seen:
            seen = g.events(60)
        assert seen[0].rank == 0
    assert g.alive() == []


def test_send_outside_a_rank_is_refused():
    with pytest.raises(RuntimeError, match="rank processes"):
        send(1)
    assert RankSent(0, 1).value == 1
