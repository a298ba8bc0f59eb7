"""A self-check figure off 1.0 is a harness finding: named in the printed leaderboard and in
leaderboard.md, and kept out of the geomean, fast_p and the heatmap's colours."""

from __future__ import annotations

from pkb_ray.report.findings import finding_lines, harness_finding
from pkb_ray.report.leaderboard import build_report, print_leaderboard
from pkb_ray.report.metrics import summarize, summary_metrics
from pkb_ray.report.tables import problem_table
from tests.helpers import make_result


def _self_check():
    return [
        make_result("reference", "allreduce", 1, speedup=1.003, ci=(0.97, 1.04)),
        make_result("reference", "allreduce", 2, speedup=5.0, ci=(1.10, 10.02)),  # a loaded CPU
        make_result("reference", "allgather", 1, speedup=0.99, ci=(1.005, 1.02)),  # interval without 1.0
        make_result("reference", "alltoall", 1, speedup=1.02, ci=(0.98, 1.06)),
    ]


def test_off_by_more_than_the_allowance_or_an_interval_without_one_is_a_finding():
    cells = _self_check()
    assert [harness_finding(c) is not None for c in cells] == [False, True, True, False]
    assert "off 1.00 by more than 0.03" in harness_finding(cells[1])
    assert "interval leaves out 1.0" in harness_finding(cells[2])
    # Another model's 5.00x is a speedup, not the harness's error.
    assert harness_finding(make_result("opus47", "allreduce", speedup=5.0, ci=(4.0, 6.0))) is None
    assert finding_lines(cells)[0] == ("reference/allgather a1: 0.99x [1.00, 1.02]: its interval leaves out 1.0")


def test_findings_stay_correct_but_out_of_the_speed_figures():
    (s,) = summarize(_self_check())
    assert s.pass_at_1 == 1.0 and s.harness_findings == 2
    assert abs(s.geomean_speedup - (1.003 * 1.02) ** 0.5) < 1e-9  # not 1.054 with the 5.00x
    assert summary_metrics([s])["reference/zeroshot/harness_findings"] == 2.0
    rows = {p: cells["reference"].text() for p, _, cells in problem_table(_self_check()).rows}
    assert rows["allreduce"] == "2/2 1.00x"  # the attempt within its allowance is the one shown
    assert rows["allgather"] == "0.99x (finding)"


def test_findings_are_printed_and_written_to_leaderboard_md(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    report = build_report(_self_check(), tmp_path, "sweep s")
    md = (tmp_path / "leaderboard.md").read_text()
    assert "## Harness findings: 2 self-check cells off 1.0" in md
    assert "- reference/allreduce a2: 5.00x [1.10, 10.02]: " in md
    print_leaderboard(report, "sweep s", self_check=True)
    out = capsys.readouterr().out
    assert "Harness findings: 2 self-check cells off 1.0" in out and "reference/allreduce a2: 5.00x" in out
    assert max(len(line) for line in out.splitlines()) <= 100
