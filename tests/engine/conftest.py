"""Shared helpers for the engine tests: real rank processes on CPU, a fixture problem."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig
from pkb_ray.engine import EvalRequest, evaluate
from pkb_ray.problems.includes import read_candidate_file

HERE = Path(__file__).parent
ADVERSARIAL = HERE / "adversarial"
CANDIDATES = HERE / "fixtures" / "candidates"
FIXTURE_PROBLEMS = HERE / "fixtures" / "problems"
LOADER = "tests.engine.fixtures.loaders:load_fixture_problem"

# Short budgets keep the suite within ~3 minutes on 2 cores: timing stops after 1 s or 40
# calls; a hang is declared after 6 s (an honest trial of the fixture takes ~1 ms).
FAST_TIMING = TimingConfig(warmup_ms=5.0, min_calls=5, max_calls=40, target_rel_ci=0.05, max_timing_s=1.0)
FAST_TIMEOUTS = TimeoutConfig(start_s=60.0, load_s=60.0, trial_s=6.0, timing_s=60.0)


@contextmanager
def fake_gpu_ray(gpus: int) -> Iterator[None]:
    """A fresh local Ray instance told it has `gpus` GPUs, shut down after. address="local":
    always a fresh instance, never a cluster another process started here."""
    import ray

    ray.init(address="local", num_cpus=2, num_gpus=gpus, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    """A fresh cache per session, or PKB_TEST_CACHE_DIR's: the GPU suite run three times in
    one device call (scripts/device/pytest_gpu.sh) keeps its node's hardware profile and
    timing modes across the runs, as a node's sweeps do, rather than measure them again."""
    shared = os.environ.get("PKB_TEST_CACHE_DIR")
    if shared:
        os.makedirs(shared, exist_ok=True)
        return shared
    return str(tmp_path_factory.mktemp("pkb_cache"))


CELL_FIELDS = ("problem_id", "problems_source", "candidate_source", "device", "size", "source_guard", "cell_id")
"""EvalRequest's own fields; any other keyword of a test's request is an `eval` setting."""


def request_for(path: Path, cache_dir: str, **kw) -> EvalRequest:
    cell = dict(problem_id="sum_ranks", problems_source=str(FIXTURE_PROBLEMS),
                candidate_source=read_candidate_file(path, root=HERE), device="cpu", size="small")
    settings = dict(world_size=2, trials=5, timing=FAST_TIMING, timeouts=FAST_TIMEOUTS, cache_dir=cache_dir)
    for k, v in kw.items():
        (cell if k in CELL_FIELDS else settings)[k] = v
    return EvalRequest(**cell, eval=EvalConfig(**settings))


@pytest.fixture
def run_eval(cache_dir):
    def run(path: Path, **kw):
        return evaluate(request_for(path, cache_dir, **kw), load_problem=LOADER)
    return run
