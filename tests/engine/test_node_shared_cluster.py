"""Shared node actors (cluster.share_nodes) on local Ray clusters of fake GPU resources:
what a sweep that could not start on them (refused for its settings, or its node held by
another sweep's private actor) leaves behind: nothing that holds a node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from .conftest import fake_gpu_ray

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture
def four_and_two_gpus():
    """A 4-GPU node and a 2-GPU one: a world-size-4 sweep evaluates on the first alone."""
    from ray.cluster_utils import Cluster

    from pkb_ray.engine import close_shared_evaluators

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 4})
    cluster.add_node(num_cpus=2, num_gpus=2)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield
    finally:
        close_shared_evaluators()
        ray.shutdown()
        cluster.shutdown()


def test_a_refused_sweep_leaves_no_shared_actor_of_its_settings(four_and_two_gpus):
    from pkb_ray.engine import SharedNodeMismatch, start_node_evaluators
    from pkb_ray.engine.node.shared_nodes import shared_actor_names

    (first,) = start_node_evaluators("cpu", world_size=4, placement="gpu_node", share=True)
    started = shared_actor_names()
    assert len(started) == 1
    # Another sweep's settings differ: refused. It must not start the 2-GPU node's shared
    # actor on the way, holding that node for settings no sweep runs with.
    with pytest.raises(SharedNodeMismatch):
        start_node_evaluators("cpu", world_size=2, placement="gpu_node", share=True, exclusive=True)
    assert shared_actor_names() == started
    # A sweep of the first one's settings at world size 2 evaluates on both nodes.
    actors = start_node_evaluators("cpu", world_size=2, placement="gpu_node", share=True)
    infos = ray.get([a.info.remote() for a in actors])
    assert sorted(len(i["gpus"]) for i in infos) == [2, 4]
    assert not any(i["exclusive"] for i in infos)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRIVATE_SWEEP = ("import sys, ray\n"
                 "ray.init(address=sys.argv[1], log_to_driver=False)\n"
                 "from pkb_ray.engine import start_node_evaluators\n"
                 "start_node_evaluators('cpu', world_size=2, placement='gpu_node')\n"
                 "print('holding', flush=True)\n"
                 "sys.stdin.read()\n")


SHARED_SWEEP = ("import sys, ray\n"
                "ray.init(address=sys.argv[1], log_to_driver=False)\n"
                "from pkb_ray.engine import start_node_evaluators\n"
                "print('waiting', flush=True)\n"
                "start_node_evaluators('cpu', world_size=2, placement='gpu_node', share=True)\n")


def _run(code: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-c", code, ray.get_runtime_context().gcs_address],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=REPO)


@contextmanager
def _node_held_by_a_private_sweep():
    """The node's GPUs held by another sweep's own actor (share_nodes=false) for the block;
    once it has ended, no shared actor may be left to take them."""
    from pkb_ray.engine import close_shared_evaluators
    from pkb_ray.engine.node.shared_nodes import shared_actor_names

    private = _run(PRIVATE_SWEEP)
    try:
        assert private.stdout.readline().strip() == "holding", private.stderr.read()[-3000:]
        yield
    finally:
        private.communicate("", timeout=120)
    try:
        deadline = time.monotonic() + 30
        while ray.available_resources().get("GPU", 0) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(5)  # a pending shared actor would have taken them by now
        assert shared_actor_names() == []
        assert ray.available_resources().get("GPU", 0) == 4
    finally:
        close_shared_evaluators()


def test_a_shared_start_that_timed_out_leaves_no_actor_to_take_the_node_later():
    from pkb_ray.engine import start_node_evaluators
    from pkb_ray.engine.node.shared_nodes import SharedNodeUnavailable

    with fake_gpu_ray(4), _node_held_by_a_private_sweep():
        with pytest.raises(SharedNodeUnavailable, match="did not start within 5 s"):
            start_node_evaluators("cpu", world_size=2, placement="gpu_node", share=True, ready_timeout_s=5)


def test_a_shared_start_interrupted_while_waiting_leaves_no_actor_behind():
    """Ctrl-C on a sweep that waits for its node (up to ready_timeout_s: minutes)."""
    with fake_gpu_ray(4), _node_held_by_a_private_sweep():
        shared = _run(SHARED_SWEEP)
        assert shared.stdout.readline().strip() == "waiting", shared.stderr.read()[-3000:]
        time.sleep(5)  # asked for its actor, waiting for it
        shared.send_signal(signal.SIGINT)
        _, err = shared.communicate(timeout=120)
        assert "KeyboardInterrupt" in err, err[-3000:]
