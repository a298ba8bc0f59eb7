"""`pkb problems check` on CPU: the audit in real gloo rank processes, one group for many
problems, each problem's findings its own (one broken problem costs only itself), the
GPU-only checks skipped with their reason, and the table, markdown and JSON it writes."""

from __future__ import annotations

import io
import json
import contextlib

import pytest
import yaml

from pkb_ray.cli import main as pkb
from pkb_ray.selfcheck.audit import AuditPlan, audit_problems
from tests.problems.helpers import copy_problem

PLAN = AuditPlan(device="cpu", size="small")


def _edit(d, name: str, old: str, new: str) -> None:
    text = (d / name).read_text()
    assert old in text, (name, old)
    (d / name).write_text(text.replace(old, new))


def _meta(d, **fields) -> None:
    meta = yaml.safe_load((d / "problem.yaml").read_text())
    meta.update(fields)
    (d / "problem.yaml").write_text(yaml.safe_dump(meta))


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit_suite")
    copy_problem(root, "a_good")
    # every rank draws the same inputs: the reference's collectives then prove nothing
    _edit(copy_problem(root, "b_same_on_every_rank"), "inputs.py", "manual_seed(seed * 1_000_003 + rank)",
          "manual_seed(seed)")
    d = copy_problem(root, "c_raises_on_rank1")
    (d / "reference.py").write_text("import torch.distributed as dist\n"
                                    "def solution(x):\n"
                                    "    if dist.get_rank() == 1:\n"
                                    "        raise ValueError('rank one broke')\n"
                                    "    out = x.clone()\n"
                                    "    dist.all_reduce(out)\n"
                                    "    return out\n")
    # an offset of 2/3 of atol: within the tolerance, but using most of it
    d = copy_problem(root, "d_uses_most_of_the_tolerance")
    _edit(d, "reference.py", "return out", "return out + 0.02")
    _edit(d, "truth.py", "import torch\n", "import torch\n\nATOL = 3.0e-2\nRTOL = 1.6e-2\n")
    _meta(d, atol=3.0e-2)
    # a float32 problem with a tolerance a million times its rounding
    d = copy_problem(root, "e_loose_tolerance")
    _meta(d, dtype="float32", atol=1.0, rtol=1.0)
    # counts that claim twice the bytes an all-reduce moves
    _edit(copy_problem(root, "f_double_counts"), "inputs.py", '"nvlink_bytes_per_rank": 2 *',
          '"nvlink_bytes_per_rank": 4 *')
    copy_problem(root, "g_good_after_the_failures")
    audited = audit_problems(2, PLAN, str(root), problem_timeout_s=120, grace_s=3.0)
    return root, {a.problem: a for a in audited.audits}


def test_sound_problems_pass_with_gpu_checks_skipped(suite):
    _, audits = suite
    for pid in ("a_good", "g_good_after_the_failures"):
        a = audits[pid]
        assert a.status == "ok" and a.correct == "matched" and not a.findings, (pid, a)
        assert a.ratios["nvlink"] == 1.0  # allreduce's counts are exactly its collective's bytes
        assert 0 < a.tolerance["err_over_tol"] < 1e-3 and len(a.tolerance["seeds"]) == 3
        assert a.collectives == ["allreduce_:32768"]
        for check in ("timing", "launch", "profiler", "roofline"):
            assert a.skipped[check].startswith("GPU-only"), a.skipped
        assert a.reference_ms is None and a.roofline_fraction is None


def test_each_finding_belongs_to_its_problem(suite):
    _, audits = suite
    assert audits["b_same_on_every_rank"].status == "finding"
    assert [f.kind for f in audits["b_same_on_every_rank"].findings] == ["inputs_identical_ranks"]
    c = audits["c_raises_on_rank1"]
    assert c.status == "FAIL" and "rank one broke" in c.message
    d = audits["d_uses_most_of_the_tolerance"]
    assert [f.kind for f in d.findings] == ["tolerance_tight"] and 0.5 < d.tolerance["err_over_tol"] <= 0.67
    e = audits["e_loose_tolerance"]
    assert [f.kind for f in e.findings] == ["tolerance_loose"]
    # on CPU the counts' disagreement is shown, not judged (no rates to weigh it with)
    f = audits["f_double_counts"]
    assert f.ratios["nvlink"] == 2.0 and f.status == "ok"


def test_budget_leaves_problems_not_reached(tmp_path):
    copy_problem(tmp_path, "a_good")
    copy_problem(tmp_path, "b_good")
    run = audit_problems(2, PLAN, str(tmp_path), budget_s=0.01)
    assert [a.status for a in run.audits] == ["skip", "skip"]
    assert all("not reached" in a.message for a in run.audits)


def test_cli_table_markdown_and_json(tmp_path):
    root = tmp_path / "suite"
    root.mkdir()
    copy_problem(root, "allreduce_copy_with_a_long_name_that_must_be_cut")
    d = copy_problem(root, "only_four")
    _meta(d, world_sizes=[4])
    out = tmp_path / "out"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        rc = pkb(["problems", "check", "--world-size", "2", "--source", str(root), "--out", str(out)])
    assert rc == 0
    table = stdout.getvalue()
    assert max(len(line) for line in table.splitlines()) <= 100, table
    assert "allreduce_copy_with" in table and "only_four" in table
    data = json.loads((out / "audit_cpu_ws2.json").read_text())
    assert data["world_size"] == 2 and data["device"] == "cpu" and data["size"] == "small"
    assert data["command"].startswith("pkb problems check --world-size 2")
    by_id = {p["problem"]: p for p in data["problems"]}
    assert by_id["only_four"]["status"] == "skip"
    assert by_id["allreduce_copy_with_a_long_name_that_must_be_cut"]["status"] == "ok"
    md = (out / "audit_cpu_ws2.md").read_text()
    assert "| allreduce_copy_with_a_long_name_that_must_be_cut | ok |" in md
    assert "GPU-only" in md and "Thresholds" in md

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert pkb(["problems", "check", "--world-size", "2", "--source", str(root), "--json",
                    "--ids", "only_four"]) == 0
    assert json.loads(stdout.getvalue())["problems"][0]["status"] == "skip"


def test_cli_reads_the_shipped_reasons_and_a_users_file(tmp_path):
    # at the small size on CPU this reference's error is ~1e-3 of its tolerance: tolerance_loose
    pid = "vocab_parallel_logprob_topk_topp"
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"{pid}:\n  tolerance_loose: small-size logits, measured on this node\n")

    def check(*extra: str) -> dict:
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            assert pkb(["problems", "check", "--world-size", "2", "--ids", pid, "--json", *extra]) == 0
        return json.loads(stdout.getvalue())

    data = check("--reasons", str(mine))
    assert data["reasons"][0].endswith("problems/audit_reasons.yaml") and data["reasons"][1] == str(mine)
    audit = data["problems"][0]
    assert audit["status"] == "ok" and [f["reason"] for f in audit["findings"]] == [
        "small-size logits, measured on this node"]
    bare = check("--no-shipped-reasons")
    assert bare["reasons"] == [] and bare["problems"][0]["status"] == "finding"


def test_upstream_references_through_the_importer():
    from pathlib import Path

    checkout = Path(__file__).resolve().parents[2] / "problems" / "fixtures" / "pkb_checkout"
    run = audit_problems(2, PLAN, f"pkb:{checkout}", ["pkb_68_huge_table", "pkb_1_all_reduce", "pkb_4_reduce"],
                         problem_timeout_s=120, grace_s=3.0)
    audits = {a.problem: a for a in run.audits}
    huge = audits["pkb_68_huge_table"]
    assert huge.status == "FAIL" and "refused" in huge.message  # estimated, never allocated
    ok = audits["pkb_1_all_reduce"]
    assert ok.status == "ok" and ok.correct == "no truth", ok
    assert "upstream" in ok.skipped["tolerance"] and "upstream" in ok.skipped["counts"]
    assert ok.measured["nvlink"] > 0 and ok.collectives  # the ledger runs without counts
    # upstream 4 fills its inputs with constants: kept as it is, and named
    assert {f.kind for f in audits["pkb_4_reduce"].findings} == {"inputs_constant", "inputs_seed_identical"}
