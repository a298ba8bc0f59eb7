import json

from pkb_ray.records import CellResult
from pkb_ray.store.journal import Journal, read_journal
from tests.helpers import make_result


def test_append_is_durable_and_round_trips(tmp_path):
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    r = make_result(problem="allreduce", speedup=2.0)
    assert j.append(r)
    j.close()
    again = Journal(path)
    assert again.done_ids() == {"m/allreduce/1/zeroshot"}
    back = again.records()[0]
    assert back.evaluation.speedup == 2.0 and back.generation.cost_usd == 0.01
    assert back.to_json() == r.to_json()


def test_second_append_of_a_cell_is_refused(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    assert j.append(make_result())
    assert not j.append(make_result(speedup=9.0))
    j.close()
    lines = (tmp_path / "j.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["evaluation"]["speedup"] == 1.5


def test_torn_tail_from_a_kill_is_cut_and_appends_stay_parseable(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    j.append(make_result(problem="a"))
    j.close()
    with open(path, "a") as fh:  # what a SIGKILL mid-write leaves behind
        fh.write(make_result(problem="b").to_json()[:57])
    j = Journal(path)
    assert j.done_ids() == {"m/a/1/zeroshot"}
    j.append(make_result(problem="c"))
    j.close()
    records = [CellResult.from_dict(json.loads(x)) for x in path.read_text().splitlines()]
    assert [r.key.problem for r in records] == ["a", "c"]


def test_fresh_archives_the_old_journal(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    j.append(make_result())
    j.close()
    fresh = Journal(path, fresh=True)
    assert len(fresh) == 0
    archived = [p for p in tmp_path.iterdir() if p.name != "j.jsonl"]
    assert len(archived) == 1 and len(read_journal(archived[0])) == 1


def test_records_of_one_cell_under_other_settings_stand_beside_each_other(tmp_path):
    from pkb_ray.store.journal import current_records

    old, new = make_result(problem="a"), make_result(problem="a", speedup=3.0)
    old.identity = {"eval.world_size": "2", "problem_version": "v1"}
    new.identity = {"eval.world_size": "2", "problem_version": "v2"}
    j = Journal(tmp_path / "j.jsonl")
    assert j.append(old) and j.append(new) and not j.append(new)
    j.close()
    records = read_journal(tmp_path / "j.jsonl")
    assert len(records) == 2 and old.record_id != new.record_id
    assert old.record_id.startswith("m/a/1/zeroshot@")
    # A report shows the latest, or the one this invocation plans; never both.
    assert [r.evaluation.speedup for r in current_records(records)] == [3.0]
    assert [r.evaluation.speedup for r in current_records(records, {"m/a/1/zeroshot": old.record_id})] == [1.5]
    assert current_records(records, {"m/a/1/zeroshot": "m/a/1/zeroshot@notmadeyet"}) == []


def test_settings_changes_name_each_key_and_refuse_records_without_identity():
    from pkb_ray.driver.identity import refusal, settings_changes

    made = make_result()
    made.identity = {"eval.device": "cpu", "eval.world_size": "2"}
    assert settings_changes([made], {"eval.device": "cpu", "eval.world_size": "2"}) == []
    changes = settings_changes([made], {"eval.device": "cuda", "eval.world_size": "2"})
    assert changes == ["eval.device: recorded cpu (1 cells), now cuda"]
    legacy = settings_changes([make_result()], {"eval.device": "cpu"})
    assert "recorded before cells kept their settings" in legacy[0]
    assert "sweep.name=NEW_NAME" in refusal("s", changes, 1)
