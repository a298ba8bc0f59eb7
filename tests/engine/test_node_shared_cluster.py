"""Shared node actors (cluster.share_nodes) on local Ray clusters of fake GPU resources:
what a sweep that could not start on them (refused for its settings, or its node held by
another sweep's private actor) leaves behind: nothing that holds a node."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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


def _gpus_free(n: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while ray.available_resources().get("GPU", 0) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    return ray.available_resources().get("GPU", 0) >= n


def test_a_shared_start_that_timed_out_leaves_no_actor_to_take_the_node_later():
    """A sweep without share_nodes holds the node; a shared sweep's start times out. Once
    the first sweep ends, no shared actor that no sweep uses may take the node."""
    from pkb_ray.engine import close_shared_evaluators, start_node_evaluators
    from pkb_ray.engine.node.shared_nodes import SharedNodeUnavailable, shared_actor_names

    with fake_gpu_ray(4):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
        private = subprocess.Popen([sys.executable, "-c", PRIVATE_SWEEP, ray.get_runtime_context().gcs_address],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
        try:
            assert private.stdout.readline().strip() == "holding"
            with pytest.raises(SharedNodeUnavailable, match="did not start within 5 s"):
                start_node_evaluators("cpu", world_size=2, placement="gpu_node", share=True, ready_timeout_s=5)
        finally:
            private.communicate("", timeout=120)
        try:
            assert _gpus_free(4, 30), "the private sweep's GPUs did not come back"
            time.sleep(5)  # a pending shared actor would have taken them by now
            assert shared_actor_names() == []
            assert ray.available_resources().get("GPU", 0) == 4
        finally:
            close_shared_evaluators()
