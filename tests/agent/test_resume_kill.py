"""SIGKILL a real episode process in the middle of a tool call, re-run the same command:
the server sees no request twice and no tool call that had finished runs again."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter

import pytest

from tests.agent.conftest import REPO, SECRET, agent_cmd, overrides, scripted
from tests.agent.tool_server import ToolServer, step_of
from tests.kill import jsonl, kill_when

pytestmark = pytest.mark.slow


def test_sigkill_mid_tool_then_rerun_repeats_nothing(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")},
           "PYTHONPATH": str(REPO), "AGENT_TEST_API_KEY": SECRET, "PYTHONUNBUFFERED": "1"}
    journal = tmp_path / "sweeps" / "tools" / "agent" / "openai_compatible" / "sum_ranks" / "1.jsonl"
    with ToolServer(scripted) as server:
        cmd = agent_cmd(*overrides(server.url, tmp_path))
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        # Kill once benchmark has finished and profile has started (profile takes seconds).
        kill_when(proc, lambda: any(r["kind"] == "tool_start" and r["tool"] == "profile" for r in jsonl(journal)),
                  timeout_s=400, settle_s=0.5, group=True)
        before = jsonl(journal)
        finished_before = {r["call_id"] for r in before if r["kind"] == "tool_result"}
        assert {r["tool"] for r in before if r["kind"] == "tool_result"} == {"check", "benchmark"}
        assert not any(r["kind"] == "end" for r in before)
        requests_before = len(server.bodies)
        assert [step_of(b) for b in server.bodies] == [1, 2]

        rerun = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        out = json.loads(rerun.stdout.strip().splitlines()[-1])
        bodies = list(server.bodies)

    assert out["reason"] == "submitted" and out["final"]["correct"]
    # Each step was requested once: steps 1-2 came from kernels_cache on the re-run.
    assert [step_of(b) for b in bodies] == [1, 2, 3, 4]
    assert len({json.dumps(b, sort_keys=True) for b in bodies}) == len(bodies)
    assert out["requests_made"] == len(bodies) - requests_before == 2
    # Tool executions, counted from the starts the journal keeps: the finished ones ran
    # once; the one the kill cut off (profile) ran again; the rest ran once.
    after = jsonl(journal)
    starts = Counter((r["tool"], r["call_id"]) for r in after if r["kind"] == "tool_start")
    assert all(n == 1 for (tool, cid), n in starts.items() if cid in finished_before)
    assert sorted(tool for (tool, _), n in starts.items() for _ in range(n)) == \
        ["benchmark", "check", "profile", "profile", "run", "submit"]
    assert out["tools_run"] == 3  # profile (again), run, submit
    results = Counter(r["call_id"] for r in after if r["kind"] == "tool_result")
    assert all(n == 1 for n in results.values()) and len(results) == 5
    assert sum(r["kind"] == "model" for r in after) == 4 and sum(r["kind"] == "end" for r in after) == 1
    assert SECRET not in json.dumps(bodies)
