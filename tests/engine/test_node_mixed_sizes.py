"""A 4-GPU node (Ray's fake GPU resources, CPU ranks) as a sweep uses it: by default two
world-size-2 evaluations at once on disjoint pairs; a world-size-4 evaluation takes the
whole node; mixed sizes are served first come, first served (a later pair does not overtake
a waiting 4-GPU evaluation)."""

from __future__ import annotations

import threading
import time

import pytest

from pkb_ray.config.schema import EvalConfig
from pkb_ray.engine.node import node_evaluator

from .conftest import CANDIDATES, fake_gpu_ray, request_for


def _node(monkeypatch, gpus=(0, 1, 2, 3), exclusive=False):
    """A NodeEvaluator as Ray starts it on a node of `gpus`, without Ray: its evaluations
    run in this process's threads, as an actor's max_concurrency threads run them."""
    monkeypatch.setattr(node_evaluator, "exit_on_sigterm", lambda: None)
    monkeypatch.setattr(node_evaluator, "scrub_secrets", lambda: [])
    monkeypatch.setattr(node_evaluator.ray, "get_gpu_ids", lambda: list(gpus))
    return node_evaluator._NodeEvaluator("cpu", exclusive=exclusive)


def test_a_sweeps_default_runs_two_pairs_at_once_on_four_gpus(monkeypatch):
    assert EvalConfig().world_size == 2 and EvalConfig().exclusive is False
    node = _node(monkeypatch)
    assert node.slots(2) == 2 and node.slots(4) == 1 and node.slots(1) == 4
    assert _node(monkeypatch, exclusive=True).slots(2) == 1


def test_mixed_world_sizes_first_come_first_served(monkeypatch, cache_dir):
    """Two pairs, then a 4-GPU evaluation, then a third pair, asked for in that order: the
    pairs run side by side, the 4-GPU one waits for both and runs alone on every GPU, and
    the third pair waits for it although two GPUs came free before it started."""
    spans: dict[str, dict] = {}

    def fake_measure(request, load_problem, build=None, lease=None, nodes=None):
        t0 = time.monotonic()
        time.sleep(0.6)
        return {"cell": request.cell_id, "gpus": lease.gpus, "start": t0, "end": time.monotonic()}

    monkeypatch.setattr(node_evaluator, "measure", fake_measure)
    monkeypatch.setattr(node_evaluator, "conclude", lambda found, co_tenancy: {**found, "co_tenancy": co_tenancy})
    node = _node(monkeypatch)

    def ask(name: str, world_size: int) -> threading.Thread:
        req = request_for(CANDIDATES / "store_exchange.py", cache_dir, world_size=world_size, cell_id=name)
        t = threading.Thread(target=lambda: spans.__setitem__(name, node.evaluate(req)))
        t.start()
        time.sleep(0.1)  # the order they ask in
        return t

    threads = [ask("pair_a", 2), ask("pair_b", 2), ask("whole", 4), ask("pair_c", 2)]
    for t in threads:
        t.join(10)
    a, b, whole, c = (spans[n] for n in ("pair_a", "pair_b", "whole", "pair_c"))
    assert {a["gpus"], b["gpus"]} == {(0, 1), (2, 3)} and a["co_tenancy"] == b["co_tenancy"] == 1
    assert a["start"] < b["end"] and b["start"] < a["end"], "the two pairs did not run at once"
    assert whole["gpus"] == (0, 1, 2, 3) and whole["co_tenancy"] == 0
    assert whole["start"] >= max(a["end"], b["end"])
    assert c["start"] >= whole["end"], "a later pair overtook the waiting 4-GPU evaluation"
    assert c["gpus"] == (0, 1) and c["co_tenancy"] == 0


@pytest.mark.slow
def test_a_four_gpu_node_actor_evaluates_mixed_sizes(cache_dir):
    """The same on a real node actor (local Ray, 4 fake GPUs, real judges and sandboxed CPU
    ranks): the driver holds two slots of it at world size 2, and every result is correct."""
    ray = pytest.importorskip("ray")
    from pkb_ray.driver.slots import slots_of
    from pkb_ray.engine import start_node_evaluators

    with fake_gpu_ray(4):
        (actor,) = start_node_evaluators("cpu", world_size=2, placement="gpu_node")
        assert len(slots_of([actor], 2, {})) == 2 and ray.get(actor.slots.remote(4)) == 1

        def req(name: str, world_size: int):
            return request_for(CANDIDATES / "store_exchange.py", cache_dir, world_size=world_size, cell_id=name,
                               time_candidates=False, trials=2)

        pairs = [actor.evaluate.remote(req("pair_a", 2)), actor.evaluate.remote(req("pair_b", 2))]
        time.sleep(1.0)  # both pairs hold their groups (their judges take seconds to start)
        whole = actor.evaluate.remote(req("whole", 4))
        time.sleep(0.5)
        later = actor.evaluate.remote(req("pair_c", 2))
        a, b, w, c = ray.get(pairs + [whole, later], timeout=900)
        ray.get(actor.close.remote())
    for res in (a, b, w, c):
        assert res.correct, (res.message, res.log[-2000:])
        assert res.sharing == "groups"
    assert sorted([a.gpus, b.gpus]) == ["0,1", "2,3"] and a.co_tenancy == b.co_tenancy == 1
    assert w.gpus == "0,1,2,3" and w.world_size == 4 and w.co_tenancy == 0
    assert c.gpus == "0,1" and c.co_tenancy == 0
