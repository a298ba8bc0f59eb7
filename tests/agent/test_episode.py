"""A tool-agent episode end to end on CPU: a scripted model on a real HTTP server, every
tool through the real engine (judges, sandboxed workers, gloo ranks) or its sandbox."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from pkb_ray.agent import EndReason, EpisodeJournal, agent_config, run_episode
from pkb_ray.agent.cli import episode_spec, split_overrides
from pkb_ray.agent.journal import End, ModelStep, ToolDone
from tests.agent.conftest import GOOD, REPO, SECRET, overrides, scripted
from tests.agent.tool_server import ToolServer, step_of

pytestmark = pytest.mark.slow


def test_episode_check_fix_benchmark_profile_run_submit(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TEST_API_KEY", SECRET)  # must reach neither the model nor a tool
    with ToolServer(scripted) as server:
        sweep, agent = split_overrides(overrides(server.url, tmp_path))
        spec = episode_spec("sum_ranks", sweep, attempt=1)
        result = asyncio.run(run_episode(spec, agent_config(agent)))
        bodies = list(server.bodies)
    try:
        assert result.reason is EndReason.SUBMITTED, result.detail
        assert result.final is not None and result.final.correct, result.final
        assert [step_of(b) for b in bodies] == [1, 2, 3, 4]
        # The request carries the tools in OpenAI's format; tool results come back as role=tool.
        assert sorted(t["function"]["name"] for t in bodies[0]["tools"]) == \
            ["benchmark", "check", "profile", "run", "submit"]

        recs = EpisodeJournal(spec.journal_path).records
        steps = [r for r in recs if isinstance(r, ModelStep)]
        assert [s.step for s in steps] == [1, 2, 3, 4]
        assert [[c["name"] for c in s.tool_calls] for s in steps] == \
            [["check"], ["benchmark", "profile"], ["run"], ["submit"]]
        assert all(s.cost_usd > 0 and not s.cached for s in steps)
        done = {r.tool: r for r in recs if isinstance(r, ToolDone)}
        check = done["check"].result
        assert not check["correct"] and check["failure"] == "incorrect"
        assert check["failing_rank"] == 1 and check["failing_trial"] == 0 and check["max_abs_error"] >= 0.99
        bench = done["benchmark"].result
        assert bench["correct"] and bench["size"] == "bench" and bench["candidate_ms"] > 0
        if bench["speedup"] is None:  # a loaded host gives no figure (engine/judge/timing/conditions.py)
            assert "loaded_host" in bench["flags"], bench
        else:
            assert bench["speedup_ci_low"] <= bench["speedup"] <= bench["speedup_ci_high"]
        prof = done["profile"].result
        assert prof["ok"] and prof["measures"].startswith("CPU ops") and len(prof["ranks"]) == 2
        assert all(r["rows"] and r["profiled_calls"] == 5 for r in prof["ranks"])
        assert len(done["profile"].content) < 8000  # fits in a message
        run = done["run"].result
        assert run["ok"] and [r["exit_code"] for r in run["ranks"]] == [0, 0]
        assert all("sum 3.0" in r["output"] for r in run["ranks"])  # 1 + 2 over 2 ranks
        assert done["submit"].final["correct"] and done["submit"].final["size"] == "small"
        assert all(d.device_s > 0 and d.wall_s > 0 for d in done.values())
        (end,) = [r for r in recs if isinstance(r, End)]
        assert end.reason == "submitted" and end.usage["tool_calls"] == 5 and end.usage["model_calls"] == 4

        # What the model saw: no harness path, variable or secret.
        seen = json.dumps(bodies)
        for leak in (SECRET, str(tmp_path), str(REPO), os.path.expanduser("~") + "/", "/opt/pkb", "PKB_",
                     "pkb_sbx_", "site-packages"):
            assert leak not in seen, leak
    finally:
        from pkb_ray.engine.node.evaluation import shutdown

        shutdown()


def test_rerun_of_a_finished_episode_calls_nothing(tmp_path):
    """Replay: the second run makes no request and runs no tool (the end record answers)."""
    calls = []

    def once(body):
        calls.append(step_of(body))
        return scripted(body) if step_of(body) > 1 else type(scripted(body))("", [("submit", {"source": GOOD})])

    with ToolServer(once) as server:
        sweep, agent = split_overrides(overrides(server.url, tmp_path))
        spec = episode_spec("sum_ranks", sweep, attempt=1)
        try:
            first = asyncio.run(run_episode(spec, agent_config(agent)))
            again = asyncio.run(run_episode(spec, agent_config(agent)))
        finally:
            from pkb_ray.engine.node.evaluation import shutdown

            shutdown()
    assert first.reason is EndReason.SUBMITTED and first.final.correct
    assert calls == [1]
    assert again.reason is EndReason.SUBMITTED and again.final.correct and again.requests_made == 0
