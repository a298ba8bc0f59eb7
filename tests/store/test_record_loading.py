"""Stored records load strictly: an unknown key is an error naming the key, the file and the
line (a silently dropped key is a result lost without a trace); records written before
versions load as version 1 and are migrated."""

import json

import pytest

from pkb_ray.records import RECORD_VERSION, EvalResult, RecordError, TurnSummary
from pkb_ray.store import Journal, TurnLog, read_journal
from tests.helpers import make_result


def agent_record() -> dict:
    result = make_result(mode="agent")
    result.turns = [TurnSummary(turn=1, correct=False, prompt="P", response="R"),
                    TurnSummary(turn=2, correct=True, speedup=1.5)]
    return json.loads(result.to_json())


def test_written_records_carry_the_version_and_round_trip(tmp_path):
    d = agent_record()
    assert d["version"] == RECORD_VERSION
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps(d) + "\n")
    (back,) = read_journal(path)
    assert [t.correct for t in back.turns] == [False, True]
    assert isinstance(back.turns[1], TurnSummary) and back.turns[1].speedup == 1.5


def test_a_record_without_version_loads_as_version_1(tmp_path):
    d = agent_record()
    del d["version"]
    for turn in d["turns"]:  # version 1 wrote a turn's `correct` as 0.0 / 1.0
        turn["correct"] = float(turn["correct"])
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps(d) + "\n")
    (back,) = read_journal(path)
    assert back.version == RECORD_VERSION
    assert [t.correct for t in back.turns] == [False, True]
    assert json.loads(back.to_json())["turns"][1]["correct"] is True


@pytest.mark.parametrize("where, key, named", [
    ((), "speedup_p50", "speedup_p50"),
    (("evaluation",), "speedup_p50", "evaluation.speedup_p50"),
    (("generation",), "reasoning_tokens", "generation.reasoning_tokens"),
    (("turns", 0), "tool_calls", "turns[0].tool_calls"),
])
def test_an_unknown_key_names_the_key_file_and_line(tmp_path, where, key, named):
    good = agent_record()
    bad = agent_record()
    bad["key"]["problem"] = "other"
    node = bad
    for step in where:
        node = node[step]
    node[key] = 1
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RecordError) as err:
        read_journal(path)
    assert f"{path}:2:" in str(err.value) and repr(named) in str(err.value)
    with pytest.raises(RecordError):
        Journal(path)  # resuming refuses it too, before anything is appended


def test_a_newer_version_is_refused(tmp_path):
    d = agent_record()
    d["version"] = RECORD_VERSION + 1
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps(d) + "\n")
    with pytest.raises(RecordError, match=f"version {RECORD_VERSION + 1}"):
        read_journal(path)


def test_turn_log_reads_old_lines_cuts_a_torn_tail_and_names_unknown_keys(tmp_path):
    path = tmp_path / "turns.jsonl"
    old = {"cell_id": "m/p/1/agent", "turn": 1, "outcome": {"correct": True, "speedup": 2.0}}
    path.write_text(json.dumps(old) + "\n" + '{"cell_id": "m/p/1/agent", "tu')
    log = TurnLog(path)
    assert log.get("m/p/1/agent", 1).speedup == 2.0
    log.put("m/p/1/agent", 2, EvalResult(correct=False))
    log.close()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["turn"] for x in lines] == [1, 2] and lines[1]["version"] == 1

    path.write_text(json.dumps({**old, "outcome": {"correct": True, "speedup_p50": 2.0}}) + "\n")
    with pytest.raises(RecordError, match=r"turns.jsonl:1: .*'outcome.speedup_p50'"):
        TurnLog(path)


def test_a_logged_harness_error_is_evaluated_again(tmp_path):
    """Older code logged harness errors as turn outcomes: such a turn is not replayed (it
    would defer its cell on every re-run); the outcome of its next evaluation is kept."""
    from pkb_ray.records import FailureClass

    path = tmp_path / "turns.jsonl"
    log = TurnLog(path)
    log.put("m/p/1/agent", 1, EvalResult(correct=False, failure=FailureClass.HARNESS_ERROR))
    log.close()
    log = TurnLog(path)
    assert log.get("m/p/1/agent", 1) is None
    log.put("m/p/1/agent", 1, EvalResult(correct=True, speedup=1.2))
    log.close()
    assert TurnLog(path).get("m/p/1/agent", 1).speedup == 1.2
