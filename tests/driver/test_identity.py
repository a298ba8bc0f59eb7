"""Issue 12's acceptance for resume: on an existing sweep, changing world size, size,
trials, device or the problems source is refused naming what changed; changing a problem's
version plans a new cell beside the old one; no recorded cell is ever shown (leaderboard,
MLflow) under settings it was not made with, and config.yaml gains one entry per accepted
invocation only. Real sweeps (subprocesses) on a real Ray cluster, MLflow on SQLite."""

from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from mlflow.tracking import MlflowClient

from pkb_ray.problems import builtin_dir
from tests.driver.conftest import scrubbed_env, sweep_cmd

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gpu_cluster():
    """A real Ray cluster whose second node claims 2 GPUs (a logical resource: nothing runs
    there), so `eval.device=auto` resolves to cuda, as on a GPU cluster."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4})
    yield cluster
    cluster.shutdown()


def _sweep(tmp_path, address, *overrides, check=None):
    proc = subprocess.run(
        sweep_cmd("model=reference", "sweep.name=s", "sweep.progress=false",
                  f"cluster.address={address}", *overrides),
        cwd=tmp_path, env=scrubbed_env(), capture_output=True, text=True, timeout=600)
    if check is not None:
        assert proc.returncode == check, proc.stderr
    return proc


def _journal(tmp_path):
    return [json.loads(x) for x in (tmp_path / "sweeps" / "s" / "journal.jsonl").read_text().splitlines()]


def _invocations(tmp_path):
    text = (tmp_path / "sweeps" / "s" / "config.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def test_changed_settings_are_refused_or_planned_anew_never_mixed(gpu_cluster, tmp_path):
    source = tmp_path / "problems"
    source.mkdir()
    shutil.copytree(builtin_dir() / "allreduce", source / "allreduce")
    shutil.copytree(builtin_dir() / "_shared", source / "_shared")  # the expert's include
    # untimed: which settings a record was made with is the point
    base = ("eval.device=cpu", f"problems.source={source}", "problems.ids=[allreduce]", "eval.time_candidates=false")
    _sweep(tmp_path, gpu_cluster.address, *base, check=0)
    assert len(_journal(tmp_path)) == 1 and len(_invocations(tmp_path)) == 1
    before = (tmp_path / "sweeps" / "s" / "leaderboard.md").read_text()

    # Each sweep-wide change is refused before anything runs, naming the key and both values.
    other_source = tmp_path / "copy"
    shutil.copytree(source, other_source)
    changes = (
        ("eval.world_size=4", "eval.world_size: recorded 2 (1 cells), now 4"),
        ("eval.size=bench", "eval.size: recorded small (1 cells), now bench"),
        ("eval.trials=2", "eval.trials: recorded 5 (1 cells), now 2"),
        (f"problems.source={other_source}", f"problems.source: recorded {source} (1 cells), now {other_source}"),
    )

    def refused(override: str) -> subprocess.CompletedProcess:
        args = [a for a in base if not a.startswith(override.split("=")[0])] + [override]
        return _sweep(tmp_path, gpu_cluster.address, *args, check=2)

    # two at a time: each is refused before it writes anything, so none can see another
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = list(pool.map(refused, [o for o, _ in changes]))
    for (_, named), proc in zip(changes, procs):
        assert named in proc.stderr, proc.stderr
        assert "sweep.name=NEW_NAME" in proc.stderr and "sweep.fresh=true" in proc.stderr
    # The device: with a GPU node in the cluster, eval.device=auto now resolves to cuda.
    gpu_node = gpu_cluster.add_node(num_cpus=1, num_gpus=2)
    try:
        args = [a for a in base if a != "eval.device=cpu"]
        proc = _sweep(tmp_path, gpu_cluster.address, *args, check=2)
        assert "eval.device: recorded cpu (1 cells), now cuda" in proc.stderr, proc.stderr
        assert "eval.size: recorded small (1 cells), now bench" in proc.stderr
    finally:
        gpu_cluster.remove_node(gpu_node)

    # Nothing of the refused commands was recorded, shown or written down.
    assert len(_journal(tmp_path)) == 1 and len(_invocations(tmp_path)) == 1
    assert (tmp_path / "sweeps" / "s" / "leaderboard.md").read_text() == before
    assert not (tmp_path / "sweeps" / "s" / "hydra").exists()

    # A new problem version plans a new cell beside the old record; only the new one shows.
    ref = source / "allreduce" / "reference.py"
    ref.write_text(ref.read_text() + "\n# edited: a new problem version\n")
    proc = _sweep(tmp_path, gpu_cluster.address, *base, check=0)
    assert "0 already recorded, 1 to run" in proc.stderr, proc.stderr
    records = _journal(tmp_path)
    assert len(records) == 2
    versions = [r["identity"]["problem_version"] for r in records]
    assert versions[0] != versions[1]
    assert "1 cells recorded" in proc.stdout  # the leaderboard shows the current record only

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("s")
    runs = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'")
    assert len(runs) == 1  # the superseded cell's run is soft-deleted, not shown beside it
    assert runs[0].data.params["problem_version"] == versions[1]

    # config.yaml: one entry per accepted invocation, each with the settings its cells have.
    invocations = _invocations(tmp_path)
    assert len(invocations) == 2
    for doc in invocations:
        for key, value in doc["settings"].items():
            assert all(r["identity"][key] == value for r in records), key
        assert doc["config"]["eval"]["world_size"] == 2


def test_experts_on_cpu_are_refused_at_planning_with_the_reason(gpu_cluster, tmp_path):
    proc = subprocess.run(
        sweep_cmd("model=expert", "eval.device=cpu", "sweep.progress=false",
                  f"cluster.address={gpu_cluster.address}"),
        cwd=tmp_path, env=scrubbed_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "model expert runs on cuda only" in proc.stderr and "evaluates on cpu" in proc.stderr
    assert "model=reference" in proc.stderr
    assert not (tmp_path / "sweeps").exists() and not (tmp_path / "mlflow.db").exists()
