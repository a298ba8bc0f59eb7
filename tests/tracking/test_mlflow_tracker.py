"""Real MLflow on SQLite: the tracker's reconcile gives each journal cell exactly one run."""

from mlflow.tracking import MlflowClient

from pkb_ray.tracking import Tracker
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
    ev = results[0].evaluation  # evaluated on a shared node, beside two other evaluations
    ev.gpus, ev.gpu_link, ev.sharing, ev.co_tenancy = "2,3", "NV18", "groups", 2
    t = MlflowTracker(uri, "sw", tmp_path / "art", {"models": "m"})
    assert isinstance(t, Tracker)
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
    assert (run.data.params["gpus"], run.data.params["gpu_link"], run.data.params["sharing"]) == ("2,3", "NV18", "groups")
    assert run.data.metrics["co_tenancy"] == 2
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


def test_made_for_comparison_names_view_table_and_heatmap(tmp_path):
    import json

    from pkb_ray.report.leaderboard import build_report
    from pkb_ray.report.metrics import summary_metrics
    from pkb_ray.report.tables import cell_table
    from pkb_ray.tracking.mlflow_tracker import CELLS_TABLE, VIEW_TAG

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    results = [make_result("a", "allreduce", 1, ci=(1.2, 1.8)), make_result("b", "allreduce", 2, correct=False)]
    t = MlflowTracker(uri, "sw", tmp_path / "art", {"device": "cpu", "world_size": "2"})
    for r in results:
        t.log_cell(r)
    t.flush()
    report = build_report(results, tmp_path / "board")
    t.log_summary(summary_metrics(report.summaries), report.files(), None, cell_table(results), ["cpu-test"])
    t.close()
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("sw")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"  # training view
    view = json.loads(exp.tags[VIEW_TAG])
    assert view["searchFilter"] == "tags.`pkb.kind` = 'cell'"  # cells flat, not folded
    assert view["columnOrder"][:3] == ["attributes.`Run Name`", "tags.`status`", "metrics.`speedup`"]
    assert view["runsPinned"] == [t.parent_id]  # the leaderboard's run on top, whatever the filter
    runs = _cell_runs(uri, "sw")
    assert sorted(r.info.run_name for r in runs) == ["a/allreduce/a1", "b/allreduce/a2"]
    run_a = next(r for r in runs if r.info.run_name == "a/allreduce/a1")
    assert run_a.data.metrics["speedup_ci_low"] == 1.2 and run_a.data.params["category"] == "collective"
    assert run_a.data.tags["speedup_interval"] == "[1.2, 1.8]"
    parent = client.search_runs([exp.experiment_id], f"tags.`{KIND_TAG}` = 'sweep'")[0]
    assert parent.info.run_name.startswith("leaderboard ")
    assert parent.data.params["device"] == "cpu" and parent.data.tags["hardware_fingerprint"] == "cpu-test"
    assert parent.data.metrics["a/zeroshot/sig_fast_1_at_k"] == 1.0
    arts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {CELLS_TABLE, "heatmap.png", "leaderboard_problems.csv"} <= arts
    table = json.load(open(client.download_artifacts(parent.info.run_id, CELLS_TABLE, str(tmp_path))))
    assert "speedup_ci_low" in table["columns"] and len(table["data"]) == 2


def test_curves_over_steps_are_logged_under_their_mode(tmp_path):
    """A sweep hands its trackers report.curves (model -> curve -> one value per step); the
    feedback agent's keep their keys (`a/agent/pass_at_turn`), the tool agent's get `tools`."""
    from pkb_ray.tracking.tracker import SweepSummary

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    t = MlflowTracker(uri, "sw", tmp_path / "art", {})
    t.log_sweep(SweepSummary({}, [], {"a": {"pass@turn": [0.0, 1.0], "submitted@step": [0.0, 0.5, 1.0]}}))
    t.close()
    client = MlflowClient(tracking_uri=uri)
    history = {key: [(m.step, m.value) for m in client.get_metric_history(t.parent_id, key)]
               for key in ("a/agent/pass_at_turn", "a/tools/submitted_at_step")}
    assert sorted(history["a/agent/pass_at_turn"]) == [(1, 0.0), (2, 1.0)]
    assert sorted(history["a/tools/submitted_at_step"]) == [(1, 0.0), (2, 0.5), (3, 1.0)]


def test_an_experiment_mirrors_one_sweep_directory(tmp_path):
    """On a shared store, a sweep of the same name from another directory would soft-delete
    this one's runs (not in its journal): it is refused before it writes anything."""
    import pytest

    from pkb_ray.tracking.owner import OWNER_TAG, SweepConflict, sweep_id

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    legacy = MlflowTracker(uri, "sw", tmp_path / "art", {})  # made before experiments had owners
    legacy.log_cell(make_result(problem="p0"))
    legacy.close()
    mine, theirs = sweep_id(tmp_path / "a" / "sw"), sweep_id(tmp_path / "b" / "sw")
    assert mine == sweep_id(tmp_path / "a" / "sw") and mine != theirs  # kept in the directory
    MlflowTracker(uri, "sw", tmp_path / "art", {}, owner=mine).close()  # adopts it
    with pytest.raises(SweepConflict, match="mirrors another sweep directory"):
        MlflowTracker(uri, "sw", tmp_path / "art", {}, owner=theirs)
    MlflowTracker(uri, "sw", tmp_path / "art", {}, owner=mine).close()
    client = MlflowClient(tracking_uri=uri)
    assert client.get_experiment_by_name("sw").tags[OWNER_TAG] == mine
    assert len(_cell_runs(uri, "sw")) == 1
