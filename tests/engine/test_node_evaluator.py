"""NodeEvaluator on a real local Ray instance (cpu placement): it evaluates, survives a
crashing candidate in the same actor process, and holds no credentials."""

from __future__ import annotations

import os

import pytest

from pkb_ray.records import FailureClass

from .conftest import ADVERSARIAL, CANDIDATES, request_for

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_local():
    os.environ["PKB_NODE_TEST_API_KEY"] = "sk-never-reaches-a-rank"
    try:
        # address="local": always a fresh instance, never a cluster another process started here.
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
        yield
    finally:
        ray.shutdown()
        os.environ.pop("PKB_NODE_TEST_API_KEY", None)


@pytest.mark.slow
def test_cpu_node_evaluator(ray_local, cache_dir):
    from pkb_ray.engine import start_node_evaluators

    actors = start_node_evaluators("cpu", world_size=2, placement="cpu", cpu_evaluators=1)
    assert len(actors) == 1
    actor = actors[0]
    info = ray.get(actor.info.remote())
    assert ray.get(actor.fingerprint.remote()).startswith("cpu-")
    assert "PKB_NODE_TEST_API_KEY" in info["scrubbed"]

    def ev(path):
        # Default loader (pkb_ray.problems.load_problem) with the fixture directory as source.
        return ray.get(actor.evaluate.remote(request_for(path, cache_dir)), timeout=300)

    ok = ev(CANDIDATES / "store_exchange.py")
    assert ok.correct, (ok.message, ok.log[-2000:])
    crash = ev(ADVERSARIAL / "segfault.py")
    assert crash.failure == FailureClass.RUNTIME_ERROR
    env = ev(ADVERSARIAL / "reads_env.py")
    assert env.correct, (env.message, env.log[-2000:])
    assert ray.get(actor.info.remote())["pid"] == info["pid"]  # the same actor process throughout


@pytest.mark.slow
def test_gpu_node_placement_needs_gpu_nodes(ray_local):
    from pkb_ray.engine import gpu_nodes_in_cluster, start_node_evaluators

    assert gpu_nodes_in_cluster() == []
    with pytest.raises(RuntimeError, match="GPUs"):
        start_node_evaluators("cuda", world_size=2, placement="gpu_node")
