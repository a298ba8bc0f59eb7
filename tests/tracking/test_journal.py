import json

from pkb_ray.records import CellResult
from pkb_ray.tracking.journal import Journal, read_journal
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
