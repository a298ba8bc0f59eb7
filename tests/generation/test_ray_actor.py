"""GenerationService as the driver runs it: a Ray async actor built from the Hydra config."""

from __future__ import annotations

import pytest

from tests.scripted_server import Reply, ScriptedServer

from .conftest import toy_problem


@pytest.mark.slow
def test_generation_service_as_ray_async_actor(tmp_path):
    ray = pytest.importorskip("ray")
    from pkb_ray.config.store import compose_config
    from pkb_ray.generation.service import GenerationService

    # address="local": a new cluster of its own, never one another process left running here
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with ScriptedServer(default=Reply(delay_s=0.3)) as srv:
            cfg = compose_config(["model=openai_compatible", f"model.api_base={srv.url}",
                                  "model.model_id=qwen", "model.max_concurrency=4"]).model
            actor = ray.remote(GenerationService).remote(
                cfg, "builtin", str(tmp_path), False, problems={"toy": toy_problem("toy")})
            gens = ray.get([actor.generate.remote("toy", a) for a in range(12)])
            assert all(g.failure is None and not g.cached for g in gens)
            assert len(srv.requests) == 12 and srv.max_in_flight == 4
            again = ray.get([actor.generate.remote("toy", a) for a in range(12)])
            assert all(g.cached for g in again) and len(srv.requests) == 12
            assert ray.get(actor.stats.remote())["cache_hits"] == 12
    finally:
        ray.shutdown()
