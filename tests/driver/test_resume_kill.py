"""SIGKILL the driver mid-sweep, re-run the same command: every cell recorded exactly once,
in the journal and in MLflow. The Ray cluster is real (started here) and outlives the
killed driver, as on a real cluster."""

import subprocess

import pytest
from mlflow.tracking import MlflowClient

from tests.driver.conftest import scrubbed_env, sweep_cmd
from tests.kill import jsonl, kill_when

pytestmark = pytest.mark.slow


def _journal_ids(path):
    return [f"{k['model']}/{k['problem']}/{k['attempt']}/{k['mode']}" for k in (r["key"] for r in jsonl(path))]


def test_sigkill_then_rerun_records_each_cell_once(ray_head, tmp_path):
    # untimed: each cell recorded once is the point, and a cell still takes seconds
    overrides = ["model=reference", "problems=collectives", "eval.device=cpu", "eval.time_candidates=false",
                 "attempts=2",
                 "sweep.name=killme", "sweep.progress=false", f"cluster.address={ray_head.address}"]
    journal = tmp_path / "sweeps" / "killme" / "journal.jsonl"
    driver = subprocess.Popen(sweep_cmd(*overrides), cwd=tmp_path, env=scrubbed_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    kill_when(driver, lambda: len(_journal_ids(journal)) >= 3, timeout_s=300)
    recorded_before = len(_journal_ids(journal))
    assert 3 <= recorded_before < 10

    rerun = subprocess.run(sweep_cmd(*overrides), cwd=tmp_path, env=scrubbed_env(),
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{recorded_before} already recorded" in rerun.stderr
    ids = _journal_ids(journal)
    assert len(ids) == 10 and len(set(ids)) == 10

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("killme")
    runs = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'cell'", max_results=1000)
    cells = [r.data.tags["pkb.cell_id"] for r in runs]
    assert sorted(cells) == sorted(ids)
    assert all(r.data.tags["pkb.complete"] == "true" for r in runs)
    # The killed invocation's parent run is closed as KILLED, not left RUNNING.
    parents = client.search_runs([exp.experiment_id], "tags.`pkb.kind` = 'sweep'")
    assert sorted(p.info.status for p in parents) == ["FINISHED", "KILLED"]
