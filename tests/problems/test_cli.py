"""`pkb problems list --json` and `pkb problems check` through the real CLI, in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pkb_ray.problems import CATEGORIES

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pkb_checkout"


def pkb(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pkb_ray.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def test_list_json_covers_every_category_with_metadata():
    res = pkb("problems", "list", "--json")
    assert res.returncode == 0, res.stderr
    problems = json.loads(res.stdout)
    assert len(problems) >= 32
    counts = Counter(p["category"] for p in problems)
    assert all(counts[c] >= 2 for c in CATEGORIES), counts
    for p in problems:
        for key in ("id", "title", "category", "origin", "parallelism", "world_sizes", "dtype",
                    "sizes", "roofline", "version"):
            assert p[key], (p["id"], key)
        assert set(p["sizes"]) >= {"small", "bench"}
        assert set(p["roofline"]) == {"nvlink_bytes_per_rank", "flops_per_rank", "hbm_bytes_per_rank"}
        assert p["roofline_world_size"] == (8 if 8 in p["world_sizes"] else max(p["world_sizes"]))
        assert p["roofline"]["hbm_bytes_per_rank"] > 0, p["id"]
        # every problem here moves data between GPUs
        assert p["roofline"]["nvlink_bytes_per_rank"] > 0, p["id"]


def test_list_plain():
    res = pkb("problems", "list")
    assert res.returncode == 0
    assert "allreduce" in res.stdout and "collective" in res.stdout


def test_check_selected_ids_and_unknown_id():
    # every builtin problem at world sizes 2 and 4: tests/problems/test_semantics.py
    res = pkb("problems", "check", "--world-size", "2", "--ids", "allreduce,broadcast", "alltoal")
    assert res.returncode == 1
    rows = {line.split()[0]: line.split()[1] for line in res.stdout.splitlines() if len(line.split()) > 1}
    assert rows["allreduce"] == "ok" and rows["broadcast"] == "ok" and rows["alltoal"] == "FAIL"
    assert "did you mean alltoall" in res.stdout  # the close match is named


def test_pkb_source_through_the_cli():
    src = f"pkb:{FIXTURE}"
    listed = json.loads(pkb("problems", "list", "--json", "--source", src).stdout)
    assert [p["id"] for p in listed][:2] == ["pkb_1_all_reduce", "pkb_2_all_gather"]
    assert listed[0]["roofline"] is None  # upstream publishes no roofline
    assert [p["degenerate"] != [] for p in listed if p["id"] == "pkb_4_reduce"] == [True]
    res = pkb("problems", "check", "--world-size", "2", "--source", src, "--ids", "pkb_1_all_reduce,pkb_4_reduce")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning: rank 0: degenerate inputs" in res.stdout


def test_coverage_lists_every_upstream_id_and_the_categories():
    res = pkb("problems", "coverage", "--json")
    assert res.returncode in (0, 1), res.stderr  # 1 while ids are missing or categories short
    cov = json.loads(res.stdout)
    assert sorted(map(int, cov["covered_by"])) == list(range(1, 88))
    assert cov["covered_by"]["1"] == ["allreduce"] and "alltoall" in cov["covered_by"]["8"]
    assert cov["missing"] == [i for i in range(1, 88) if not cov["covered_by"][str(i)]]
    assert set(cov["per_category"]) == set(CATEGORIES)
    assert cov["short_categories"] == {c: n for c, n in cov["per_category"].items() if n < 5}
    assert (res.returncode == 0) == (not cov["missing"] and not cov["short_categories"])
    text = pkb("problems", "coverage").stdout
    assert " 1  allreduce" in text and "per category" in text and "covered:" in text
