"""SIGKILL the driver mid-sweep, re-run the same command: every cell recorded exactly once,
in the journal and in MLflow. The Ray cluster is real (started here) and outlives the
killed driver, as on a real cluster."""

import json
import signal
import subprocess
import time

import pytest
from mlflow.tracking import MlflowClient

from tests.driver.conftest import scrubbed_env, sweep_cmd

pytestmark = pytest.mark.slow


def _journal_ids(path):
    if not path.exists():
        return []
    ids = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # the torn tail a kill may leave
        k = rec["key"]
        ids.append(f"{k['model']}/{k['problem']}/{k['attempt']}/{k['mode']}")
    return ids


def test_sigkill_then_rerun_records_each_cell_once(ray_head, tmp_path):
    overrides = ["model=reference", "problems=collectives", "eval.device=cpu", "attempts=2",
                 "sweep.name=killme", "sweep.progress=false", f"cluster.address={ray_head.address}"]
    journal = tmp_path / "sweeps" / "killme" / "journal.jsonl"
    driver = subprocess.Popen(sweep_cmd(*overrides), cwd=tmp_path, env=scrubbed_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while len(_journal_ids(journal)) < 3:
        assert driver.poll() is None, driver.stdout.read()
        assert time.time() < deadline, "no progress before the kill"
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
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
