"""Issue 5's acceptance: a sweep against a local OpenAI-compatible server generates, caches
and evaluates; re-running it, or a new sweep over the same cells, makes zero requests."""

import json
import subprocess

import pytest

from tests.scripted_server import ScriptedServer
from tests.driver.conftest import scrubbed_env, sweep_cmd

pytestmark = pytest.mark.slow


def _sweep(server, ray_head, tmp_path, name):
    proc = subprocess.run(
        sweep_cmd("model=openai_compatible", f"model.api_base={server.url}",
                  "model.model_id=localbot", "problems=smoke", "attempts=2", "eval.device=cpu",
                  "eval.time_candidates=false",  # every answer fails before timing: no reference worker
                  f"sweep.name={name}", "sweep.progress=false", f"cluster.address={ray_head.address}"),
        cwd=tmp_path, env=scrubbed_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "sweeps" / name / "journal.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines]


def test_generate_cache_evaluate_then_zero_requests(ray_head, tmp_path):
    with ScriptedServer() as server:
        cells = _sweep(server, ray_head, tmp_path, "local")
        assert len(server.requests) == 6  # 3 problems x 2 attempts
        assert len(cells) == 6
        for cell in cells:
            assert cell["generation"]["candidate_source"].startswith("import torch")
            assert cell["generation"]["completion_tokens"] > 0
            # The default answer `solution(x): return x.clone()` is evaluated: wrong for a
            # one-input collective, a runtime error for the two-input GEMM problem.
            expected = "runtime_error" if cell["key"]["problem"] == "gemm_allreduce" else "incorrect"
            assert cell["failure"] == expected, cell["message"]
        cached = list((tmp_path / "kernels_cache").rglob("*.json"))
        assert len(cached) == 6

        _sweep(server, ray_head, tmp_path, "local")  # the same command again
        assert len(server.requests) == 6
        again = _sweep(server, ray_head, tmp_path, "another_sweep")  # new sweep, same cells
        assert len(server.requests) == 6
        assert len(again) == 6 and all(c["generation"]["cached"] for c in again)
