"""Real MLflow on SQLite: the tracker's reconcile gives each journal cell exactly one run."""

from mlflow.tracking import MlflowClient

from pkb_ray.tracking.mlflow_tracker import CELL_TAG, COMPLETE_TAG, KIND_TAG, MlflowTracker
from tests.helpers import make_result


def _cell_runs(uri, name):
    c = MlflowClient(tracking_uri=uri)
    exp = c.get_experiment_by_name(name)
    return c.search_runs([exp.experiment_id], f"tags.`{KIND_TAG}` = 'cell'", max_results=1000)


def test_cells_logged_with_fields_and_reconciled_exactly_once(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKEPROVIDER_API_KEY", "sk-this-is-a-secret-value")
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    results = [make_result(problem=f"p{i}") for i in range(3)]
    results[1].generation.response = "leaked sk-this-is-a-secret-value here"
    t = MlflowTracker(uri, "sw", tmp_path / "art", {"models": "m"})
    t.log_cell(results[0])
    t.log_cell(results[1])
    t.close()
    runs = _cell_runs(uri, "sw")
    assert len(runs) == 2
    run = next(r for r in runs if r.data.tags[CELL_TAG] == "m/p0/1/zeroshot")
    assert run.data.params["model"] == "m" and run.data.params["world_size"] == "2"
    assert run.data.params["hardware_fingerprint"] == "cpu-test"
    assert run.data.metrics["correct"] == 1.0 and run.data.metrics["speedup"] == 1.5
    assert run.data.metrics["tokens"] == 30 and run.data.tags["status"] == "correct"
    assert run.data.tags[COMPLETE_TAG] == "true"
    arts = {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(run.info.run_id)}
    assert {"prompt.txt", "response.txt", "candidate.py", "eval_log.txt"} <= arts
    leaked = next(r for r in runs if r.data.tags[CELL_TAG] == "m/p1/1/zeroshot")
    text = MlflowClient(tracking_uri=uri).download_artifacts(leaked.info.run_id, "response.txt", str(tmp_path))
    assert "sk-this-is-a-secret-value" not in open(text).read()

    # A new invocation: the journal holds 3 cells; MLflow has 2 -> exactly one is re-logged.
    t2 = MlflowTracker(uri, "sw", tmp_path / "art", {"models": "m"})
    assert t2.reconcile(results) == 1
    t2.close()
    runs = _cell_runs(uri, "sw")
    assert sorted(r.data.tags[CELL_TAG] for r in runs) == [f"m/p{i}/1/zeroshot" for i in range(3)]


def test_incomplete_and_orphan_runs_are_replaced(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    t = MlflowTracker(uri, "sw", tmp_path / "art", {})
    client = MlflowClient(tracking_uri=uri)
    # A run the killed writer left half-written, and one the journal does not know.
    client.create_run(t.experiment_id, tags={KIND_TAG: "cell", CELL_TAG: "m/p0/1/zeroshot"})
    client.create_run(t.experiment_id, tags={KIND_TAG: "cell", CELL_TAG: "m/zz/1/zeroshot",
                                             COMPLETE_TAG: "true"})
    assert t.reconcile([make_result(problem="p0")]) == 1
    t.close()
    runs = _cell_runs(uri, "sw")
    assert [r.data.tags[CELL_TAG] for r in runs] == ["m/p0/1/zeroshot"]
    assert runs[0].data.tags[COMPLETE_TAG] == "true"
