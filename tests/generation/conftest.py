"""Fixtures: one scripted OpenAI-compatible server per test module, toy problems."""

from __future__ import annotations

import pytest

from pkb_ray.config.schema import ModelConfig
from tests.scripted_server import ScriptedServer
from pkb_ray.problems.spec import Problem, ProblemSpec

TOY_REFERENCE = '''import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
'''

TOY_EXPERT = '''import torch


def solution(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # expert stand-in
'''


def toy_problem(pid: str = "toy_allreduce", expert: bool = True, version: str = "v1") -> Problem:
    spec = ProblemSpec(
        id=pid, title="Toy all-reduce", category="collective", origin="tests",
        parallelism="data parallel", world_sizes=(2,), dtype="float32", atol=1e-5, rtol=1e-5,
        sizes={"small": {"n": 8}, "bench": {"n": 1 << 20}},
        description="Sum x over ranks.", version=version,
    )
    return Problem(spec=spec, solution=lambda x: x, reference_source=TOY_REFERENCE,
                   make_inputs_fn=lambda rank, ws, seed, size, device: (),
                   expert_source=TOY_EXPERT if expert else None)


def local_cfg(server: ScriptedServer, name: str, **kw) -> ModelConfig:
    """A model on the local server; `name` is also the model the server sees."""
    d = dict(name=name, provider="openai_compatible", model_id=name, api_base=server.url,
             max_retries=3, request_timeout_s=10.0, max_concurrency=8,
             price_input_per_mtok=1.0, price_output_per_mtok=4.0)
    d.update(kw)
    return ModelConfig(**d)


# Backoff short enough for tests; Retry-After still sets the real wait.
FAST_RETRY = {"backoff_base_s": 0.05, "backoff_max_s": 0.2}


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.reset()
    return server
