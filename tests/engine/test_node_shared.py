"""Shared node actors (cluster.share_nodes) on a local Ray instance with 4 fake GPU resources,
real judges and sandboxed CPU ranks. Two sweeps' callers reach one actor per node, which Ray
books once; its two world-size-2 groups go to whichever caller's work is ready, so once one
sweep's work runs out the other's takes both groups (a static share, tests/engine/
test_node_shares.py, has one slot and leaves the other half idle). A result that ran beside
the other sweep's work says so."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from .conftest import CANDIDATES, fake_gpu_ray, request_for

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def ray_4_fake_gpus():
    from pkb_ray.engine import close_shared_evaluators

    with fake_gpu_ray(4):
        try:
            yield
        finally:
            close_shared_evaluators()


def hold(evaluate, gpus, seconds: float):
    """A tool for run_tool (what a tool call is to the node): holds its group for `seconds`
    and says which group and when (epoch seconds: one clock for every process here)."""
    t0 = time.time()
    time.sleep(seconds)
    return gpus, t0, time.time()


def _sweep_evaluator():
    """What a sweep with cluster.share_nodes=true starts (Sweep._start_actors)."""
    from pkb_ray.engine import start_node_evaluators

    (actor,) = start_node_evaluators("cpu", world_size=2, placement="gpu_node", share=True)
    return actor


def test_sweeps_that_share_a_node_reach_one_actor_that_books_it_once(ray_4_fake_gpus):
    from pkb_ray.engine import SharedNodeMismatch, close_shared_evaluators, start_node_evaluators

    zeroshot, tools = _sweep_evaluator(), _sweep_evaluator()
    assert zeroshot._actor_id == tools._actor_id
    info = ray.get(zeroshot.info.remote())
    assert info["gpus"] == [0, 1, 2, 3] and info["whole_node"], info
    assert ray.get(tools.slots.remote(2)) == 2
    assert ray.available_resources().get("GPU", 0) == 0  # booked once, by the one actor
    # Another sweep's settings would be recorded for results measured under these: refused.
    with pytest.raises(SharedNodeMismatch, match="shared node actor"):
        start_node_evaluators("cpu", world_size=2, placement="gpu_node", share=True, exclusive=True)
    assert len(close_shared_evaluators()) == 1
    deadline = time.monotonic() + 30
    while ray.available_resources().get("GPU", 0) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("GPU", 0) == 4  # closed: the node goes back to Ray


def test_a_free_group_goes_to_whichever_sweeps_work_is_ready(ray_4_fake_gpus, cache_dir):
    zeroshot, tools = _sweep_evaluator(), _sweep_evaluator()
    req = request_for(CANDIDATES / "store_exchange.py", cache_dir, time_candidates=False)

    # Both sweeps have work: a zero-shot evaluation and a tool call hold the two groups at once.
    call = tools.run_tool.remote(2, hold, 8.0)
    result = ray.get(zeroshot.evaluate.remote(req), timeout=600)
    tool_gpus, _, _ = ray.get(call, timeout=600)
    assert result.correct, (result.message, result.log[-2000:])
    assert {result.gpus, ",".join(map(str, tool_gpus))} == {"0,1", "2,3"}
    # It ran beside the other sweep's tool call, and says so (a static share says None).
    assert result.co_tenancy == 1 and result.sharing == "groups"

    # The zero-shot sweep has run out of work: the tool calls take both groups at once.
    calls = ray.get([tools.run_tool.remote(2, hold, 3.0) for _ in range(2)], timeout=600)
    assert {tuple(g) for g, _, _ in calls} == {(0, 1), (2, 3)}
    (_, a0, a1), (_, b0, b1) = calls
    assert min(a1, b1) - max(a0, b0) > 2.0, calls  # they overlapped, nearly all their time


def test_a_shared_actor_outlives_the_sweep_that_started_it(ray_4_fake_gpus):
    # The first sweep starts the node's actor, then dies of SIGKILL (as a killed sweep does).
    code = ("import os, sys, ray\n"
            "ray.init(address=sys.argv[1], log_to_driver=False)\n"
            "from pkb_ray.engine import start_node_evaluators\n"
            "(a,) = start_node_evaluators('cpu', world_size=2, placement='gpu_node', share=True)\n"
            "print(a._actor_id.hex(), flush=True)\n"
            "os.kill(os.getpid(), 9)\n")
    gcs = ray.get_runtime_context().gcs_address
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code, gcs], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=300)
    assert out.returncode == -9, out.stderr[-3000:]
    started = out.stdout.split()[-1]
    time.sleep(2)  # Ray would end an actor owned by the dead driver by now
    actor = _sweep_evaluator()
    assert actor._actor_id.hex() == started
    assert ray.get(actor.slots.remote(2)) == 2


def test_pkb_nodes_lists_and_closes_the_shared_actors(ray_4_fake_gpus):
    """`pkb nodes list|close` from another process, as the cluster's owner runs it: the GPUs
    held by the detached actor go back to Ray."""
    _sweep_evaluator()
    gcs = ray.get_runtime_context().gcs_address
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}

    def pkb(*argv: str) -> str:
        out = subprocess.run([sys.executable, "-m", "pkb_ray.cli", "nodes", *argv, "--address", gcs],
                             capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        return out.stdout

    assert "1 shared node actor(s) alive\n  pkb-shared-node-" in pkb("list")
    assert ray.available_resources().get("GPU", 0) == 0
    assert "1 shared node actor(s) closed" in pkb("close")
    deadline = time.monotonic() + 30
    while ray.available_resources().get("GPU", 0) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("GPU", 0) == 4
    assert "0 shared node actor(s) alive" in pkb("list")


def test_a_node_full_of_waiting_calls_still_answers_its_admin_calls(ray_4_fake_gpus):
    """More calls than the actor has threads for its groups (CALLERS sweeps' at world size 1,
    and one sweep more): a starting sweep's slots and info and a ping (fingerprint) are still
    answered at once (ADMIN_THREADS), not queued behind calls that wait for a group."""
    from pkb_ray.engine.node.shared_nodes import CALLERS

    actor = _sweep_evaluator()
    waiting = [actor.run_tool.remote(4, hold, 60.0) for _ in range(4 * CALLERS + 4)]
    time.sleep(3)  # every thread for groups taken: one holds the node, the rest wait
    assert ray.get(actor.slots.remote(2), timeout=10) == 2
    assert ray.get(actor.info.remote(), timeout=10)["gpus"] == [0, 1, 2, 3]
    assert ray.get(actor.fingerprint.remote(), timeout=10)
    del waiting  # their results go unread; close_shared_evaluators ends them with the actor
