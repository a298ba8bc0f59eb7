"""`pkb problems list --json` and `pkb problems check` through the real CLI, in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pkb_ray.problems import CATEGORIES, load_problems

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
        assert p["roofline_world_size"] == 8
        assert p["roofline"]["hbm_bytes_per_rank"] > 0, p["id"]
        # every problem here moves data between GPUs
        assert p["roofline"]["nvlink_bytes_per_rank"] > 0, p["id"]


def test_list_plain():
    res = pkb("problems", "list")
    assert res.returncode == 0
    assert "allreduce" in res.stdout and "collective" in res.stdout


@pytest.mark.parametrize("world_size", [2, 4])
def test_check_every_builtin_problem(world_size):
    res = pkb("problems", "check", "--world-size", str(world_size))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(lines) == len(load_problems().problems)
    assert all(ln.startswith("ok ") for ln in lines), res.stdout


def test_check_selected_ids_and_unknown_id():
    res = pkb("problems", "check", "--world-size", "2", "--ids", "allreduce", "alltoal")
    assert res.returncode == 1
    assert "ok   allreduce" in res.stdout
    assert "FAIL alltoal" in res.stdout and "alltoall" in res.stdout  # the close match is named


def test_pkb_source_through_the_cli():
    src = f"pkb:{FIXTURE}"
    listed = json.loads(pkb("problems", "list", "--json", "--source", src).stdout)
    assert [p["id"] for p in listed] == ["pkb_1_all_reduce", "pkb_2_all_gather", "pkb_7_ring_shift_pair"]
    assert listed[0]["roofline"] is None  # upstream publishes no roofline
    res = pkb("problems", "check", "--world-size", "2", "--source", src)
    assert res.returncode == 0, res.stdout + res.stderr
