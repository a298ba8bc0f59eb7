"""`mode=tools` in a sweep, on a real Ray cluster started here, against a real local server
that speaks tool calls: each tool call is an evaluation task on the sweep's evaluators.

The scripted episode (tests/agent/conftest.py): check(bad) fails on rank 1 -> benchmark(good)
and profile(good) -> run(script) -> submit(good), on sum_ranks at 2 gloo ranks.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.agent.conftest import GOOD, REPO, SECRET, overrides as agent_overrides, scripted
from tests.agent.tool_server import ToolServer, step_of
from tests.driver.conftest import scrubbed_env, sweep_cmd
from tests.kill import jsonl, kill_when

pytestmark = pytest.mark.slow

NAME = "tools"


def overrides(url: str, tmp: Path, ray_head, *extra: str) -> list[str]:
    out = []
    for o in agent_overrides(url, tmp):
        # `pkb agent run`'s agent.KEY is a sweep's mode.tools.KEY
        out.append("mode.tools." + o[len("agent."):] if o.startswith("agent.") else o)
    return [*out, "mode=tools", "problems.ids=[sum_ranks]", "sweep.progress=false",
            f"cluster.address={ray_head.address}", *extra]


def journal_lines(tmp: Path) -> list[dict]:
    return jsonl(tmp / "sweeps" / NAME / "journal.jsonl")


def episode_records(tmp: Path) -> list[dict]:
    return jsonl(sorted((tmp / "sweeps" / NAME / "agent").glob("*/*/*.jsonl")))


def test_tools_sweep_records_every_step_and_reruns_nothing(ray_head, tmp_path):
    env = scrubbed_env(AGENT_TEST_API_KEY=SECRET)
    with ToolServer(scripted) as server:
        cmd = sweep_cmd(*overrides(server.url, tmp_path, ray_head, "tracking.enabled=true"))
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert [step_of(b) for b in server.bodies] == [1, 2, 3, 4]

        (cell,) = journal_lines(tmp_path)
        assert cell["key"]["mode"] == "tools" and cell["status"] == "correct", cell["message"]
        assert cell["evaluation"]["size"] == "small" and cell["generation"]["candidate_source"] == GOOD
        assert cell["identity"]["mode.tools.limits.tool_calls"] == "30"
        turns = cell["turns"]
        assert [t["tool"] for t in turns] == ["check", "benchmark", "profile", "run", "submit"]
        assert turns[0]["failure"] == "incorrect" and not turns[0]["correct"]
        assert '"failing_rank": 1' in turns[0]["prompt"]  # what the model was shown
        assert turns[1]["correct"] and turns[4]["correct"]
        # A loaded host gives no figure (engine/judge/timing/conditions.py), and says so.
        assert (turns[1]["speedup"] or 0) > 0 or "the host was loaded" in turns[1]["message"], turns[1]
        assert all(t["device_s"] > 0 for t in turns)
        assert cell["generation"]["cost_usd"] == pytest.approx(sum(t["cost_usd"] for t in turns))
        assert cell["generation"]["cost_usd"] > 0 and "[user]" in cell["generation"]["prompt"]

        # MLflow: a metric per step, the tools' device-seconds, the transcript as an artifact.
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
        exp = client.get_experiment_by_name(NAME)
        (run,) = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'")
        history = sorted(client.get_metric_history(run.info.run_id, "turn_correct"), key=lambda m: m.step)
        assert [(m.step, m.value) for m in history] == [(1, 0.0), (2, 1.0), (3, 0.0), (4, 0.0), (5, 1.0)]
        assert run.data.metrics["tool_calls"] == 5 and run.data.metrics["tool_device_s"] > 0
        path = client.download_artifacts(run.info.run_id, "conversation.json", str(tmp_path))
        transcript = json.loads(Path(path).read_text())
        assert [t["tool"] for t in transcript] == ["check", "benchmark", "profile", "run", "submit"]
        assert transcript[3]["tool_input"].startswith("import os, torch")

        # The same command again: the cell is recorded, nothing is asked or run.
        starts = sum(r["kind"] == "tool_start" for r in episode_records(tmp_path))
        again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(server.bodies) == 4
        assert sum(r["kind"] == "tool_start" for r in episode_records(tmp_path)) == starts == 5

        # A driver killed after the episode ended, before it recorded the cell (the sweep's
        # journal loses the line): the re-run records it from the episode's journal alone,
        # with the whole episode's spend, and asks and runs nothing.
        sweep_journal = tmp_path / "sweeps" / NAME / "journal.jsonl"
        sweep_journal.write_text("")
        (tmp_path / "mlflow.db").unlink()
        late = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert late.returncode == 0, late.stdout + late.stderr
        assert len(server.bodies) == 4
        (again_cell,) = journal_lines(tmp_path)
        assert again_cell["status"] == "correct" and len(again_cell["turns"]) == 5
        assert again_cell["generation"]["cost_usd"] == pytest.approx(cell["generation"]["cost_usd"])
        assert again_cell["generation"]["prompt_tokens"] == cell["generation"]["prompt_tokens"] > 0
    # What the model saw, through Ray's workers too: no harness path, variable or secret.
    seen = json.dumps(server.bodies)
    for leak in (SECRET, str(tmp_path), str(REPO), os.path.expanduser("~") + "/", "PKB_", "pkb_sbx_",
                 "site-packages", "RAY_"):
        assert leak not in seen, leak


def test_sigkill_mid_tool_then_rerun_repeats_no_request_and_no_finished_tool(ray_head, tmp_path):
    env = scrubbed_env(AGENT_TEST_API_KEY=SECRET)
    with ToolServer(scripted) as server:
        cmd = sweep_cmd(*overrides(server.url, tmp_path, ray_head, "tracking.enabled=false"))
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        # Kill once profile's step has left the episode for an evaluator (it takes seconds).
        kill_when(proc, lambda: any(r["kind"] == "tool_start" and r["tool"] == "profile"
                                    for r in episode_records(tmp_path)),
                  timeout_s=600, settle_s=0.5, group=True)
        before = episode_records(tmp_path)
        finished = {r["call_id"] for r in before if r["kind"] == "tool_result"}
        assert {r["tool"] for r in before if r["kind"] == "tool_result"} == {"check", "benchmark"}
        assert journal_lines(tmp_path) == []
        assert [step_of(b) for b in server.bodies] == [1, 2]

        rerun = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        bodies = list(server.bodies)

    assert [step_of(b) for b in bodies] == [1, 2, 3, 4]  # steps 1-2 came from kernels_cache
    after = episode_records(tmp_path)
    starts = Counter((r["tool"], r["call_id"]) for r in after if r["kind"] == "tool_start")
    assert all(n == 1 for (_, cid), n in starts.items() if cid in finished)
    assert sorted(t for (t, _), n in starts.items() for _ in range(n)) == \
        ["benchmark", "check", "profile", "profile", "run", "submit"]
    (cell,) = journal_lines(tmp_path)
    assert cell["status"] == "correct"
    assert [t["tool"] for t in cell["turns"]] == ["check", "benchmark", "profile", "run", "submit"]
    # The cell's spend is the whole episode's, steps paid for by the killed run included.
    assert cell["generation"]["cost_usd"] == pytest.approx(sum(t["cost_usd"] for t in cell["turns"]))
    assert cell["generation"]["cost_usd"] > 0 and not cell["generation"]["cached"]


def test_the_budget_sees_each_step_as_it_is_spent(ray_head, tmp_path):
    """budget_usd below one model call: each episode's first step is paid, then no model
    call is made (an episode is recorded only at its end, so a budget charged at recording
    let every episode run to the end: 8 requests here), and the cells are left for a re-run."""
    env = scrubbed_env(AGENT_TEST_API_KEY=SECRET)
    with ToolServer(scripted) as server:
        cmd = sweep_cmd(*overrides(server.url, tmp_path, ray_head, "tracking.enabled=false", "attempts=2",
                                   "budget_usd=0.001"))
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        bodies = list(server.bodies)
    assert [step_of(b) for b in bodies] == [1, 1], proc.stderr[-3000:]
    assert journal_lines(tmp_path) == []
    assert "budget_usd=0.001" in proc.stderr and "deferred" in proc.stderr, proc.stderr[-3000:]


def test_settings_and_models_that_cannot_run_tools_are_refused_before_anything_runs(tmp_path):
    def sweep(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(sweep_cmd("mode=tools", "eval.device=cpu", "sweep.progress=false",
                                        "tracking.enabled=false", "problems=smoke", *extra),
                              cwd=tmp_path, env=scrubbed_env(), capture_output=True, text=True, timeout=300)

    # three at once: each is refused before it writes anything
    with ThreadPoolExecutor(max_workers=3) as pool:
        bad_limit, pseudo, undeclared = pool.map(lambda extra: sweep(*extra), [
            ("model=reference", "mode.tools.limits.tool_calls=0"),
            ("model=reference",),
            ("model=openai_compatible", "model.api_base=http://127.0.0.1:9/v1", "model.model_id=x")])
    assert bad_limit.returncode != 0
    assert "mode.tools.limits.tool_calls must be > 0, got 0" in bad_limit.stderr
    assert pseudo.returncode != 0
    assert "mode=tools" in pseudo.stderr and "pseudo-model" in pseudo.stderr and "Nothing ran" in pseudo.stderr
    assert undeclared.returncode != 0 and "mode.tools.tool_models=[openai_compatible]" in undeclared.stderr
    assert not (tmp_path / "sweeps").exists() or not list((tmp_path / "sweeps").rglob("journal.jsonl"))
