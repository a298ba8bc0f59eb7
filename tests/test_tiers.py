"""The suite's tiers and quarantine (tests/conftest.py), on a small suite run by pytester."""

from __future__ import annotations

import re
from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()
INI = """
[pytest]
markers =
    slow: slow tier
    quarantine(reason): quarantined
"""


def _suite(pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_a="""
        import pytest

        @pytest.mark.slow
        def test_slow_first_in_file():
            pass

        def test_fast():
            pass

        @pytest.mark.quarantine("flips between two classes")
        def test_quarantined_assertion():
            assert False, "the other class"

        @pytest.mark.quarantine("flips between two classes")
        def test_quarantined_pass():
            pass

        @pytest.mark.quarantine("flips between two classes")
        def test_quarantined_crash():
            raise RuntimeError("not what the quarantine is for")
    """, test_b="""
        def test_fast_in_a_later_file():
            pass
    """)


def test_fast_tests_run_before_slow_ones_and_each_tier_is_timed(pytester):
    _suite(pytester)
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    order = [m[1] for line in result.outlines if (m := re.match(r"test_\w+\.py::(\w+) ", line))]
    assert order.index("test_fast_in_a_later_file") < order.index("test_slow_first_in_file")
    assert order[-1] == "test_slow_first_in_file"
    result.stdout.re_match_lines([r"fast tier: 5 tests in \d+ s; slow tier: 1 tests in \d+ s"])


def test_quarantine_reports_an_assertion_and_fails_on_anything_else(pytester):
    _suite(pytester)
    result = pytester.runpytest("-ra", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1, xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_quarantined_assertion*quarantined: flips between two classes*"])
    result.stdout.fnmatch_lines(["*FAILED*test_quarantined_crash*RuntimeError*"])


def test_a_quarantine_without_a_reason_is_refused(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.quarantine
        def test_x():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*quarantine needs a reason*"])
