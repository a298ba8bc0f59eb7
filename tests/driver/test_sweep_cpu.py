"""End to end on CPU: `python sweep.py model=reference problems=smoke eval.device=cpu attempts=2`
with a real local Ray instance, real rank processes and MLflow on SQLite."""

import csv
from concurrent.futures import ThreadPoolExecutor

import pytest
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

CHILD_PARAMS = {"model", "problem", "attempt", "mode", "world_size", "hardware_fingerprint",
                "harness_version"}
CHILD_METRICS = {"compiled", "correct", "tokens", "cost_usd", "latency_s"}


def test_reference_smoke_sweep_records_every_cell(run_sweep_cli, tmp_path):
    proc = run_sweep_cli("model=reference", "problems=smoke", "eval.device=cpu", "attempts=2",
                         "sweep.name=smoke")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("smoke")
    runs = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'")
    assert len(runs) == 6  # 1 model x 3 problems x 2 attempts
    for run in runs:
        assert CHILD_PARAMS <= set(run.data.params), run.data.params
        assert CHILD_METRICS <= set(run.data.metrics), run.data.metrics
        assert run.data.tags["status"] == "correct", run.data.tags
        assert run.data.metrics["correct"] == 1.0
        assert {"status", "failure_class"} <= set(run.data.tags)
        assert run.data.tags["mlflow.parentRunId"]
    parent = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'sweep'")[0]
    assert parent.data.metrics["reference/zeroshot/pass_at_1"] == 1.0
    arts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"fast_p.png", "leaderboard.md", "leaderboard.csv", "heatmap.png", "cells_table.json"} <= arts
    assert parent.data.params["device"] == "cpu" and parent.data.params["world_size"] == "2"
    assert sorted(r.info.run_name for r in runs)[0] == "reference/allgather/a1"
    # Quiet: no Ray token warning for the embedded cluster, no Hydra folder, and the plan
    # header's arithmetic adds up.
    assert "Token authentication" not in proc.stderr
    assert not (tmp_path / "sweeps" / "smoke" / "hydra").exists()
    assert "6 cells = 1 model x 3 problems x 2 attempts" in proc.stderr
    assert "device cpu, world size 2, size small, trials 5" in proc.stdout
    board = tmp_path / "sweeps" / "smoke" / "leaderboard.csv"
    rows = list(csv.DictReader(open(board)))
    assert rows[0]["model"] == "reference" and float(rows[0]["pass@1"]) == 1.0
    assert "reference" in proc.stdout  # the printed leaderboard

    # Re-running the same command records nothing new and makes no duplicate run.
    again = run_sweep_cli("model=reference", "problems=smoke", "eval.device=cpu", "attempts=2",
                          "sweep.name=smoke")
    # A done sweep answers before Ray starts: the same command, all cells recorded.
    assert "all 6 cells done; nothing to run" in again.stderr
    config_docs = (tmp_path / "sweeps" / "smoke" / "config.yaml").read_text().count("invoked_at:")
    assert config_docs == 1  # the no-op run planned nothing and noted no invocation
    runs = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'")
    assert len(runs) == 6


def test_a_dry_run_prints_the_plan_and_writes_nothing(run_sweep_cli, tmp_path):
    proc = run_sweep_cli("--dry-run", "model=reference", "problems=smoke", "eval.device=cpu", "attempts=2",
                         "sweep.name=dry")
    out = proc.stdout.splitlines()
    assert out[0].startswith("pkb: sweep 'dry': 6 cells = 1 model x 3 problems x 2 attempts; 0 already "
                             "recorded, 6 to run on cpu (world size 2")
    assert out[1].startswith("pkb: estimate: about") and "  eval.world_size = 2" in out
    cells = [line for line in out if line.startswith("  to run  reference/")]
    assert len(cells) == 6 and cells[0].startswith("  to run  reference/allreduce/1/zeroshot@")
    assert not (tmp_path / "sweeps").exists() and not (tmp_path / "mlflow.db").exists()


def test_a_gpu_sweep_is_planned_and_priced_on_a_cpu_machine_without_keys(tmp_path):
    """A laptop plans a 40-model GPU sweep before renting GPUs: no key, GPU or Ray node (the
    cluster address below answers nothing), and the cost and GPU-hours for a stated node."""
    import os
    import subprocess

    from pkb_ray.generation.models import api_model_names
    from tests.driver.conftest import scrubbed_env, sweep_cmd

    env = {k: v for k, v in scrubbed_env().items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(sweep_cmd("--dry-run", "models=all", "attempts=3", "eval.device=cuda",
                                    "problems=collectives", "cluster.address=ray://127.0.0.1:1"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    n = len(api_model_names())
    assert f"{n * 5 * 3} cells = {n} models x 5 problems x 3 attempts" in proc.stdout
    assert f"{n} models planned without an API key set here" in proc.stderr
    assert "planned for 1 node of 8 x H100 (cluster.nodes, cluster.node_type)" in proc.stdout
    assert "GPU estimate on 1 x (8 x H100): 4 GPU groups of 2 per node" in proc.stdout
    assert "GPU-hours rented (8 GPUs)" in proc.stdout and "API estimate: about $" in proc.stdout
    assert os.listdir(tmp_path) == []  # nothing written: no sweep, no MLflow store


def test_commands_with_other_settings_never_share_a_leaderboard(run_sweep_cli, tmp_path):
    """Without sweep.name each command gets the sweep its settings name: k=1 and k=2 cells
    never meet in one leaderboard, and each command again answers before Ray starts."""
    # untimed: which cells meet in which leaderboard is the point
    one = ("model=reference", "problems.ids=[allreduce]", "eval.device=cpu", "eval.time_candidates=false")
    first = run_sweep_cli(*one)
    second = run_sweep_cli(*one, "attempts=2")
    assert "0/0 cells" not in second.stderr and "a new sweep, 'reference-cpu-" in second.stderr
    names = sorted(p.name for p in (tmp_path / "sweeps").iterdir() if not p.name.startswith("."))
    assert len(names) == 2 and all(n.startswith("reference-cpu-") for n in names), names
    ks = {n: [row["k"] for row in csv.DictReader(open(tmp_path / "sweeps" / n / "leaderboard.csv"))]
          for n in names}
    assert sorted(ks.values()) == [["1"], ["2"]], ks
    assert f"sweep '{names[0]}'" in first.stderr + second.stderr
    with ThreadPoolExecutor(max_workers=2) as pool:  # both answer before anything runs
        agains = list(pool.map(lambda command: run_sweep_cli(*command), (one, (*one, "attempts=2"))))
    for again, cells in zip(agains, (1, 2)):
        assert f"all {cells} cells done; nothing to run" in again.stderr, again.stderr


def test_default_cpu_self_check_runs_the_representative_set(run_sweep_cli, tmp_path):
    """`python3 sweep.py` as a newcomer types it, on CPU: 12 problems, one per category, and
    it says what it did instead of the GPU sweep it was asked for."""
    proc = run_sweep_cli("sweep.name=newcomer")
    assert "12 representative problems, one per category" in proc.stderr
    assert "12 cells = 1 model x 12 problems x 1 attempt" in proc.stderr
    assert "pkb: estimate: about" in proc.stderr
    assert "GPU evaluation needs GPU nodes" in proc.stderr
    assert "cluster.address=auto" in proc.stderr
    assert "CPU self-check" in proc.stderr
    lines = (tmp_path / "sweeps" / "newcomer" / "journal.jsonl").read_text().splitlines()
    assert len(lines) == 12
    # What ran is what is recorded: the fallback model, and why, in config.yaml and MLflow.
    import yaml

    doc = list(yaml.safe_load_all((tmp_path / "sweeps" / "newcomer" / "config.yaml").read_text()))[-1]
    assert doc["config"]["model"]["name"] == "reference" and doc["config"]["models"] == ["reference"]
    assert doc["config"]["fallback"].startswith("expert -> reference: no Ray node with >= 2 GPUs")
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("newcomer")
    parent = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'sweep'")[0]
    assert parent.data.params["models"] == "reference"
    assert parent.data.params["fallback"].startswith("expert -> reference")
    assert "Self-check: each problem's reference ran as its own candidate" in proc.stdout
    again = run_sweep_cli("sweep.name=newcomer")
    assert "all 12 cells done; nothing to run" in again.stderr
