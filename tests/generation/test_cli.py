"""`pkb models list` and `pkb prompt`."""

from __future__ import annotations

import json

from pkb_ray.cli import main


def test_models_list_shows_every_model(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line[:1].isalnum()]  # a model's first line: its name
    assert len(rows) >= 43 + 2  # >= 40 API models, expert, reference, openai_compatible; header, summary
    opus = next(line for line in rows if line.startswith("opus47 "))
    assert "anthropic/claude-opus-4-7" in opus and "ANTHROPIC_API_KEY" in opus and "25.00" in opus
    assert max(map(len, out)) <= 100  # the provider and limits are left out, and named
    assert any(line.startswith("Left out to fit 100 columns: provider") for line in out)
    monkeypatch.setenv("COLUMNS", "90")  # a long model id wraps after a `/`, never mid-word
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "together_ai/meta-llama/" in out and "Llama-3.3-70B-Instruct-Turbo" in out


def test_models_list_marks_which_keys_are_set_without_printing_them(capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-1234")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "sk-ant-secret-value-1234" not in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert " ANTHROPIC_API_KEY set " in lines["opus47"]
    assert " OPENAI_API_KEY unset " in lines["gpt55"]
    assert main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["opus47"]["key_set"] is True and rows["gpt55"]["key_set"] is False
    assert rows["expert"]["key_set"] is None


def test_models_list_json(capsys):
    assert main(["models", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["in_all"] for r in rows) >= 40
    assert {r["name"] for r in rows if not r["in_all"]} == {"expert", "reference",
                                                            "openai_compatible"}


def test_prompt_prints_a_builtin_problem(capsys):
    assert main(["prompt", "allreduce", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["hash"]) == 64 and "all_reduce" in doc["messages"][1]["content"]


def test_prompt_from_a_cached_profile(capsys, tmp_path):
    import dataclasses

    from .test_hardware_text import h100x8_missing_3_5

    path = tmp_path / "profile.json"
    path.write_text(json.dumps(dataclasses.asdict(h100x8_missing_3_5())))
    assert main(["prompt", "allreduce", "--json", "--world-size", "8", "--profile", str(path)]) == 0
    user = json.loads(capsys.readouterr().out)["messages"][1]["content"]
    assert "8 x NVIDIA H100 80GB HBM3" in user and "except 3-5 (SYS)" in user


def test_prompt_is_folded_for_reading_and_raw_is_the_text_as_sent(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["prompt", "allreduce", "--raw"]) == 0
    raw = capsys.readouterr().out
    assert main(["prompt", "allreduce"]) == 0
    folded = capsys.readouterr()
    assert max(len(line) for line in raw.splitlines()) > 100  # paragraphs are one line as sent
    assert max(len(line) for line in (folded.out + folded.err).splitlines()) <= 100
    assert folded.out.split() == raw.split()  # the same words, only the line breaks differ
    assert "--raw" in folded.err
