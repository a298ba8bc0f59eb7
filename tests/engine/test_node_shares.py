"""Two sweeps on one Ray cluster and one 4-GPU node (a local Ray instance with 4 fake GPU
resources, real judges and sandboxed CPU ranks). An actor holding the whole node makes a
second one wait, never share; with cluster.node_gpus each holds a disjoint share and both
evaluate at once, recording co_tenancy None (a share cannot see the other's work)."""

from __future__ import annotations

import pytest

from .conftest import CANDIDATES, fake_gpu_ray, request_for

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture
def ray_4_fake_gpus():
    with fake_gpu_ray(4):
        yield


def test_a_second_whole_node_actor_waits_for_the_first(ray_4_fake_gpus):
    from ray.exceptions import GetTimeoutError

    from pkb_ray.engine import start_node_evaluators

    (first,) = start_node_evaluators("cpu", world_size=2, placement="gpu_node")
    assert ray.get(first.info.remote())["gpus"] == [0, 1, 2, 3]
    with pytest.raises(GetTimeoutError):
        start_node_evaluators("cpu", world_size=2, placement="gpu_node", ready_timeout_s=5)


def test_two_shares_of_a_node_evaluate_at_once_on_disjoint_gpus(ray_4_fake_gpus, cache_dir):
    from pkb_ray.engine import start_node_evaluators

    (a,) = start_node_evaluators("cpu", world_size=2, placement="gpu_node", node_gpus=2)
    (b,) = start_node_evaluators("cpu", world_size=2, placement="gpu_node", node_gpus=2)
    infos = ray.get([a.info.remote(), b.info.remote()])
    assert sorted(g for i in infos for g in i["gpus"]) == [0, 1, 2, 3], infos
    assert [i["whole_node"] for i in infos] == [False, False]
    assert ray.get([a.slots.remote(2), b.slots.remote(2)]) == [1, 1]
    req = request_for(CANDIDATES / "store_exchange.py", cache_dir, time_candidates=False)
    results = ray.get([a.evaluate.remote(req), b.evaluate.remote(req)], timeout=900)
    ray.get([a.close.remote(), b.close.remote()])
    for res in results:
        assert res.correct, (res.message, res.log[-2000:])
        assert res.sharing == "groups" and res.co_tenancy is None
    assert sorted(res.gpus for res in results) == sorted(",".join(map(str, i["gpus"])) for i in infos)


def test_shares_on_two_nodes_are_each_a_share_not_a_shared_actor():
    """cluster.node_gpus on a cluster of two 4-GPU nodes: an actor of 2 GPUs on each node, and
    neither is a node's shared actor (cluster.share_nodes), which a later sweep would join and
    which no sweep closes."""
    from ray.cluster_utils import Cluster

    from pkb_ray.driver.ray_runtime import close_evaluators
    from pkb_ray.engine import start_node_evaluators
    from pkb_ray.engine.node.shared_nodes import shared_actor_names

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 4})
    cluster.add_node(num_cpus=2, num_gpus=4)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        actors = start_node_evaluators("cpu", world_size=2, placement="gpu_node", node_gpus=2)
        infos = ray.get([a.info.remote() for a in actors])
        assert len({i["node_id"] for i in infos}) == 2, infos
        assert [(len(i["gpus"]), i["whole_node"]) for i in infos] == [(2, False), (2, False)], infos
        assert shared_actor_names() == []
        close_evaluators(actors)
    finally:
        ray.shutdown()
        cluster.shutdown()
