import math

import pytest

from pkb_ray.records import FailureClass
from pkb_ray.report.metrics import geometric_mean, pass_at_k, summarize, summary_metrics
from tests.helpers import make_result


def test_pass_at_k_matches_the_unbiased_estimator():
    assert pass_at_k(3, 0, 1) == 0.0
    assert pass_at_k(3, 3, 1) == 1.0
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    # 1 - C(2,2)/C(4,2) = 1 - 1/6
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_at_k(5, 1, 3) == pytest.approx(1 - math.comb(4, 3) / math.comb(5, 3))


def test_geometric_mean_ignores_missing():
    assert geometric_mean([2.0, 8.0, None]) == pytest.approx(4.0)
    assert geometric_mean([]) is None


def test_summary_per_model():
    results = [
        make_result("a", "p1", 1, correct=True, speedup=2.0),
        make_result("a", "p1", 2, correct=False),
        make_result("a", "p2", 1, correct=True, speedup=0.5),
        make_result("a", "p2", 2, correct=True, speedup=1.2),
        make_result("b", "p1", 1, correct=False, failure=FailureClass.NAN),
    ]
    (a, b) = summarize(results)
    assert (a.model, a.k, a.problems, a.cells) == ("a", 2, 2, 4)
    assert a.pass_at_1 == pytest.approx((0.5 + 1.0) / 2)
    assert a.pass_at_k == pytest.approx(1.0)
    # fast_1: p1 has one of two attempts > 1 (pass@2 = 1), p2 has one of two (1.2) -> 1
    assert a.fast_p_at_k[1.0] == pytest.approx(1.0)
    # fast_1.5: only p1's 2.0 qualifies
    assert a.fast_p_at_k[1.5] == pytest.approx(0.5)
    assert a.geomean_speedup == pytest.approx((2.0 * 0.5 * 1.2) ** (1 / 3))
    assert a.cost_usd == pytest.approx(0.04)
    assert b.pass_at_1 == 0.0 and b.geomean_speedup is None
    m = summary_metrics([a, b])
    assert m["a/zeroshot/pass_at_1"] == pytest.approx(0.75)
    assert "b/zeroshot/geomean_speedup" not in m
    assert all("@" not in k for k in m)


def test_zeroshot_and_agent_side_by_side(tmp_path):
    from pkb_ray.report.leaderboard import build_report, mode_comparison

    results = [make_result("a", "p1", 1, correct=False),
               make_result("a", "p1", 1, correct=True, speedup=1.4, mode="agent"),
               make_result("b", "p1", 1, correct=True)]
    report = build_report(results, tmp_path)
    row, other = mode_comparison(report.summaries)  # b ran zero-shot only: "-" as agent
    assert row["model"] == "a"
    assert row["zeroshot pass@1"] == "0.000" and row["agent pass@1"] == "1.000"
    assert other["agent pass@1"] == "-"
    md = report.markdown_path.read_text()
    assert "Modes side by side" in md and "| a | 0.000 | 0.000 | 0.000 | - | 0.01 | 1.000 |" in md
    assert report.curves["a"]["pass@turn"] == [1.0]
