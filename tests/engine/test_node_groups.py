"""GPU groups in a real NodeEvaluator: a local Ray instance with 8 fake GPU resources, real
judges and sandboxed CPU ranks. Four world-size-2 evaluations run at once on disjoint
groups and are all correct; exclusive mode runs them one at a time."""

from __future__ import annotations

import pytest

from .conftest import CANDIDATES, fake_gpu_ray, request_for

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture
def ray_8_fake_gpus():
    with fake_gpu_ray(8):
        yield


def _evaluate_at_once(cache_dir: str, n: int, exclusive: bool):
    from pkb_ray.engine import start_node_evaluators

    (actor,) = start_node_evaluators("cpu", world_size=2, placement="gpu_node", exclusive=exclusive)
    info = ray.get(actor.info.remote())
    assert info["gpus"] == list(range(8)), info
    req = request_for(CANDIDATES / "store_exchange.py", cache_dir, time_candidates=False)
    results = ray.get([actor.evaluate.remote(req) for _ in range(n)], timeout=900)
    ray.get(actor.close.remote())
    return actor, results


def test_four_groups_of_two_evaluate_at_once_on_disjoint_gpus(ray_8_fake_gpus, cache_dir):
    actor, results = _evaluate_at_once(cache_dir, 4, exclusive=False)
    for res in results:
        assert res.correct, (res.message, res.log[-2000:])
        assert res.sharing == "groups" and res.gpu_link == "uniform"
    # All four held their groups at the same moment (each counts the other three), so their
    # GPU sets must not overlap: the four pairs of the node.
    assert [res.co_tenancy for res in results] == [3, 3, 3, 3]
    assert sorted(res.gpus for res in results) == ["0,1", "2,3", "4,5", "6,7"]
    assert ray.get(actor.slots.remote(2)) == 4


def test_exclusive_mode_runs_one_evaluation_at_a_time(ray_8_fake_gpus, cache_dir):
    actor, results = _evaluate_at_once(cache_dir, 2, exclusive=True)
    for res in results:
        assert res.correct, (res.message, res.log[-2000:])
        assert res.sharing == "exclusive" and res.co_tenancy == 0 and res.gpus == "0,1"
    assert ray.get(actor.slots.remote(2)) == 1
