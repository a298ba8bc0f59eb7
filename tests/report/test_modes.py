"""Zero-shot, feedback-agent and tool-agent figures side by side; the curves over steps;
several sweeps combined only under one setting; `pkb report A B C` end to end on journals
written by the real store."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pkb_ray.cli import main
from pkb_ray.report.combine import SettingsDiffer, combine_sweeps
from pkb_ray.report.leaderboard import build_report, print_leaderboard
from pkb_ray.report.modes import mode_comparison
from pkb_ray.report.turn_curves import curve_metric_key, mode_curves, step_curves
from pkb_ray.store.journal import Journal
from tests.report.modes_records import cell, three_modes

REPO = Path(__file__).resolve().parents[2]


def test_modes_side_by_side(tmp_path, capsys, monkeypatch):
    records = combine_sweeps(three_modes())
    report = build_report(records, tmp_path)
    a, b = mode_comparison(report.summaries)
    assert list(a)[:6] == ["model", "zeroshot pass@1", "zeroshot fast_1@1", "zeroshot sig_fast_1@1",
                           "zeroshot geomean x", "zeroshot cost $"]
    # a, zero-shot: p1 1.2x with its interval above 1, p2 wrong.
    assert [a[f"zeroshot {m}"] for m in ("pass@1", "fast_1@1", "sig_fast_1@1", "geomean x")] == \
        ["0.500", "0.500", "0.500", "1.200"]
    # a, feedback agent: both correct, 1.5x (interval spans 1) and 0.8x.
    assert [a[f"agent {m}"] for m in ("pass@1", "fast_1@1", "sig_fast_1@1", "geomean x")] == \
        ["1.000", "0.500", "0.000", f"{(1.5 * 0.8) ** 0.5:.3f}"]
    # a, tool agent: both submitted correct and significantly faster.
    assert [a[f"tools {m}"] for m in ("pass@1", "fast_1@1", "sig_fast_1@1", "geomean x")] == \
        ["1.000", "1.000", "1.000", f"{(2.0 * 1.1) ** 0.5:.3f}"]
    assert a["tools cost $"] == "0.02"
    # b was not swept with the feedback agent; its tools sweep covered p1 only.
    assert b["zeroshot pass@1"] == "0.000" and b["zeroshot geomean x"] == "-"
    assert {b[f"agent {m}"] for m in ("pass@1", "fast_1@1", "geomean x", "cost $")} == {"-"}
    assert b["tools pass@1"] == "1.000" and b["tools sig_fast_1@1"] == "0.000"  # 1.3x, no interval
    md = report.markdown_path.read_text()
    assert "## Modes side by side" in md
    assert "zeroshot = zero-shot, agent = feedback agent, tools = tool agent" in md
    assert "b: zeroshot 2 problems x 1 attempts, tools 1 problems x 1 attempts" in md
    print_leaderboard(report, "t", wide=True)
    out = capsys.readouterr().out
    assert "modes side by side" in out and "sig_fast_1@1" in out
    # Fitted to 100 columns: no line is longer, and what was left out is named.
    monkeypatch.setenv("COLUMNS", "100")
    print_leaderboard(report, "t")
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "modes side by side" in out and "Left out to fit 100 columns:" in out
    assert "--wide" in out


def test_one_mode_has_no_comparison(tmp_path):
    report = build_report(three_modes()["zs"], tmp_path)
    assert mode_comparison(report.summaries) == []
    assert "Modes side by side" not in report.markdown_path.read_text()


def test_step_curves_by_hand(tmp_path):
    t = lambda tool, ok=False, x=None: dict(tool=tool, correct=ok, speedup=x)  # noqa: E731
    records = [
        # p1: fails a check, passes one, benchmarks 0.9x then 1.4x, submits the 1.4x.
        cell("a", "p1", "tools", speedup=1.4, turns=[
            t("check"), t("check", True), t("benchmark", True, 0.9), t("benchmark", True, 1.4),
            t("submit", True, 1.4)]),
        # p2: `run` reports correct (it judges nothing: never counts), a check passes, the
        # submission is wrong.
        cell("a", "p2", "tools", correct=False, turns=[
            t("run", True), t("profile"), t("check", True), t("submit")]),
        # p3, two attempts: a correct 0.5x submitted at once; an episode that called no tool.
        cell("a", "p3", "tools", speedup=0.5, turns=[t("submit", True, 0.5)]),
        cell("a", "p3", "tools", correct=False, attempt=2),
        # The feedback agent: wrong, correct 0.9x, correct 1.3x.
        cell("a", "p1", "agent", speedup=1.3, turns=[
            dict(correct=False), dict(correct=True, speedup=0.9), dict(correct=True, speedup=1.3)]),
    ]
    curves = step_curves(records)["a"]
    # Per problem the share of attempts that count, averaged over p1, p2, p3 (p3 = 1/2).
    assert curves["pass@step"] == pytest.approx([1 / 6, 1 / 2, 5 / 6, 5 / 6, 5 / 6])
    assert curves["fast1@step"] == pytest.approx([0, 0, 0, 1 / 3, 1 / 3])
    assert curves["submitted@step"] == pytest.approx([1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 2])
    assert curves["submitted_fast1@step"] == pytest.approx([0, 0, 0, 0, 1 / 3])
    assert curves["pass@turn"] == [0.0, 1.0, 1.0] and curves["fast1@turn"] == [0.0, 0.0, 1.0]
    assert mode_curves(step_curves(records), "agent") == {"a": {"pass@turn": [0.0, 1.0, 1.0], "fast1@turn": [0.0, 0.0, 1.0]}}
    assert curve_metric_key("a", "submitted@step") == "a/tools/submitted_at_step"
    assert curve_metric_key("a", "pass@turn") == "a/agent/pass_at_turn"
    # p3 has two attempts, so the correctness curves also come as pass@2 (p1 and p2, with one
    # attempt, count as at pass@1); the speed curves do not.
    assert curves["pass@step:k2"] == pytest.approx([1 / 3, 2 / 3, 1, 1, 1])
    assert curves["submitted@step:k2"] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1 / 3, 2 / 3])
    assert "fast1@step:k2" not in curves and "pass@turn:k2" not in curves  # the agent cell: 1 attempt
    assert curve_metric_key("a", "submitted@step:k2") == "a/tools/submitted_at_step_k2"

    report = build_report(records, tmp_path)
    tools = next(s for s in report.summaries if s.mode == "tools")
    assert tools.pass_at_1 == pytest.approx(curves["submitted@step"][-1])  # the final answer
    assert tools.k == 2 and tools.pass_at_k == pytest.approx(curves["submitted@step:k2"][-1])
    assert "submitted@step:k2" in report.markdown_path.read_text()
    assert report.curve_plots["tools"].name == "pass_at_step.png" and report.curve_plots["tools"].exists()
    assert report.curve_plots["agent"].name == "pass_at_turn.png" and report.curve_plots["agent"].exists()
    md = report.markdown_path.read_text()
    assert "| a | tools | submitted@step | 5 | 0.17, 0.17, 0.17, 0.17, 0.50 |" in md


def test_differing_settings_are_refused_naming_the_key():
    sweeps = three_modes()
    sweeps["tl"] = [cell("a", "p1", "tools", eval__world_size="4"),
                    cell("a", "p2", "tools", eval__world_size="4")]
    sweeps["ag"][0].identity["problem_version"] = "p1-v2"
    with pytest.raises(SettingsDiffer) as err:
        combine_sweeps(sweeps)
    text = str(err.value)
    assert "eval.world_size: zs 2; ag 2; tl 4" in text
    assert "problem_version (problem p1): zs p1-v1; ag p1-v2; tl p1-v1" in text
    assert "zeroshot" not in text.split("\n", 1)[1]  # the mode itself is no difference

    # The same cell in two sweeps: which one to show is not for the report to guess.
    with pytest.raises(SettingsDiffer, match="cell a/p1/1/zeroshot is in sweeps zs, zs2"):
        combine_sweeps({"zs": three_modes()["zs"], "zs2": [cell("a", "p1", "zeroshot")]})


def _write_journal(root: Path, name: str, records) -> None:
    journal = Journal(root / name / "journal.jsonl")
    for r in records:
        assert journal.append(r)
    journal.close()


def test_sweeps_on_other_gpus_are_refused_naming_them():
    sweeps = three_modes()
    for r in sweeps["tl"]:
        r.hardware_fingerprint = "NVIDIA_H100x2-0123456789ab"
    for r in sweeps["zs"]:
        r.hardware_fingerprint = "NVIDIA_H200x2-ba9876543210"
    with pytest.raises(SettingsDiffer) as err:
        combine_sweeps(sweeps)
    assert "hardware: zs NVIDIA_H200x2; ag cpu; tl NVIDIA_H100x2" in str(err.value)
    for r in sweeps["tl"] + sweeps["ag"]:
        r.hardware_fingerprint = "NVIDIA_H200x2-ffffffffffff"  # the same kind, another node or driver
    assert len(combine_sweeps(sweeps)) == sum(len(v) for v in sweeps.values())


def test_pkb_report_over_three_sweeps(tmp_path, capsys):
    for name, records in three_modes().items():
        _write_journal(tmp_path, name, records)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pkb_ray.cli", "report", "zs", "ag", "tl",
                           "--root", str(tmp_path)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out_dir = tmp_path / "_compare" / "zs+ag+tl"
    assert f"wrote into {out_dir}" in done.stdout
    assert "zs (zeroshot, 4 cells), ag (agent, 2 cells), tl (tools, 3 cells): 9 cells" in done.stdout
    md = (out_dir / "leaderboard.md").read_text()
    assert "## Modes side by side" in md and "| a | 0.500 | 0.500 | 0.500 | 1.200 | 0.02 | 1.000 |" in md
    assert (out_dir / "pass_at_step.png").exists() and (out_dir / "pass_at_turn.png").exists()

    # Another world size: refused, naming the key and both sweeps' values; nothing written.
    _write_journal(tmp_path, "w4", [cell("a", "p1", "tools", eval__world_size="4")])
    assert main(["report", "zs", "w4", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "eval.world_size: zs 2; w4 4" in err and "Nothing was written" in err
    assert not (tmp_path / "_compare" / "zs+w4").exists()

    # --out puts the combined report elsewhere; a missing sweep is named with the known ones.
    assert main(["report", "zs", "tl", "--root", str(tmp_path), "--out", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp" / "leaderboard.md").exists()
    assert main(["report", "zs", "nope", "--root", str(tmp_path)]) == 2
    assert "sweeps under" in capsys.readouterr().err


def test_pkb_report_filters_and_splits_by_co_tenancy(tmp_path, capsys):
    """Cells evaluated alone and beside others on a shared node: --max-co-tenancy keeps the
    speedups timed with at most that many neighbours (naming what it left out) and every
    cell without a speedup (a failure is a failure on any node); --split-co-tenancy writes
    one leaderboard per co-tenancy; the header says the node was shared."""
    records = [cell("a", "p1", "zeroshot", speedup=1.2), cell("a", "p2", "zeroshot", speedup=2.0),
               cell("b", "p1", "zeroshot", speedup=0.5), cell("b", "p2", "zeroshot", correct=False)]
    for r, tenancy in zip(records, (0, 3, 0, 1)):
        r.evaluation.co_tenancy, r.evaluation.sharing, r.evaluation.gpus = tenancy, "groups", "0,1"
    records.append(cell("c", "p1", "zeroshot"))  # recorded before groups: no co-tenancy
    _write_journal(tmp_path, "shared", records)

    assert main(["report", "shared", "--root", str(tmp_path), "--max-co-tenancy", "0"]) == 0
    out = capsys.readouterr().out
    assert "3 with co-tenancy <= 0 (2 timed beside more or unrecorded: left out" in out
    md = (tmp_path / "shared" / "co_tenancy_le0" / "leaderboard.md").read_text()
    assert "| a |" in md and "| b |" in md and "| c |" not in md

    assert main(["report", "shared", "--root", str(tmp_path), "--split-co-tenancy"]) == 0
    out = capsys.readouterr().out
    for level, n in ((0, 3), (3, 2), ("none", 2)):  # b/p2, wrong, is in every part
        assert f"co-tenancy {level}: {n} cells" in out
        assert (tmp_path / "shared" / f"co_tenancy_{level}" / "leaderboard.md").exists()
    assert not (tmp_path / "shared" / "co_tenancy_1").exists()
    assert main(["report", "shared", "--root", str(tmp_path)]) == 0
    md = (tmp_path / "shared" / "leaderboard.md").read_text()
    assert "node shared (GPU groups): alone (2 cells), beside 1 other evaluation (1 cells)" in md
    assert main(["report", "shared", "--root", str(tmp_path), "--max-co-tenancy", "-1"]) == 2
