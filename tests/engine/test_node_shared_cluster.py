"""Shared node actors (cluster.share_nodes) on a Ray cluster of two nodes of fake GPU
resources: what a sweep refused for its settings leaves behind."""

from __future__ import annotations

import pytest

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
