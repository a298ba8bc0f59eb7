"""The leaderboard: header from the cells themselves, totals without duplicated columns,
significant fast_p beside the point estimate, launch-bound and implausible kept apart, the
per-problem table and the heatmap."""

import csv

import pytest

from pkb_ray.records import FailureClass
from pkb_ray.report.leaderboard import build_report
from pkb_ray.report.metrics import summarize
from tests.helpers import make_result


def _records():
    return [
        make_result("a", "allreduce", 1, speedup=1.30, ci=(1.21, 1.40)),   # fast, significantly
        make_result("a", "allgather", 1, speedup=1.04, ci=(0.97, 1.10)),   # fast, not significantly
        make_result("a", "broadcast", 1, speedup=3.00, ci=None),           # no interval: never significant
        make_result("a", "alltoall", 1, speedup=2.50, ci=(2.4, 2.6), flags=["launch_bound"]),
        make_result("a", "tp_mlp", 1, correct=False, failure=FailureClass.IMPLAUSIBLE, category="tensor"),
        make_result("b", "allreduce", 1, correct=False, failure=FailureClass.COMPILE_ERROR),
        make_result("b", "allgather", 1, speedup=0.80, ci=(0.78, 0.82)),
    ]


def test_significant_fast_p_and_results_kept_apart():
    a, b = summarize(_records())
    assert a.pass_at_1 == pytest.approx(4 / 5)  # implausible is not correct
    assert a.counts["implausible"] == 1 and a.launch_bound == 1
    assert a.fast_p_at_k[1.0] == pytest.approx(3 / 5)  # 1.30, 1.04, 3.00 (not the launch-bound)
    assert a.sig_fast_p_at_k[1.0] == pytest.approx(1 / 5)  # only 1.30's interval is above 1
    assert a.fast_p_at_k[2.0] == pytest.approx(1 / 5) and a.sig_fast_p_at_k[2.0] == 0.0
    assert a.geomean_speedup == pytest.approx((1.30 * 1.04 * 3.00) ** (1 / 3))
    assert b.fast_p_at_k[1.0] == 0.0 and b.counts["failed"] == 1


def test_report_header_tables_and_heatmap(tmp_path):
    report = build_report(_records(), tmp_path, "sweep t")
    md = report.markdown_path.read_text()
    assert "trials ?" in md  # records made without a trial count say so
    assert "device cpu, world size 2, size small" in md and "harness t1" in md
    assert "hardware cpu-test" in md and "not measurements of GPU speed" in md
    header = next(line for line in md.splitlines() if line.startswith("| model |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert len(cols) == len(set(cols))
    assert not any(c.startswith(("fast1@", "fast_0@")) for c in cols)  # = fast_1@k / pass@k
    assert {"fast_1@k", "sig_fast_1@k", "implausible", "launch_bound"} <= set(cols)
    rows = {r["problem"]: r for r in csv.DictReader(open(report.problems_csv_path))}
    assert rows["allreduce"]["a"] == "1.30x" and rows["allreduce"]["b"] == "compile_error"
    assert rows["alltoall"]["a"] == "2.50x (launch-bound)" and rows["alltoall"]["b"] == "-"
    assert rows["tp_mlp"]["a"] == "implausible" and rows["tp_mlp"]["category"] == "tensor"
    assert report.heatmap_path.exists() and report.heatmap_path.stat().st_size > 10_000
    assert {p.name for p in report.files()} >= {"leaderboard.md", "leaderboard.csv",
                                                "leaderboard_problems.csv", "heatmap.png", "fast_p.png"}


def test_mixed_settings_are_listed_in_the_header(tmp_path):
    records = _records()
    records[0].evaluation.device = "cuda"
    records[0].hardware_fingerprint = "NVIDIA_H200x2-abc"
    md = build_report(records, tmp_path).markdown_path.read_text()
    assert "device cpu (6 cells) / cuda (1 cells)" in md
    assert "NVIDIA_H200x2-abc (1 cells)" in md
