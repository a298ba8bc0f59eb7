"""The parent's verdict from what ranks report: the GPU-only findings (timing, launch-bound,
roofline, counts) judged here on CPU from made-up rank reports and a made-up node profile,
and the tolerance and input findings from real inputs of the allreduce problem."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pkb_ray.engine.hardware import HardwareProfile
from pkb_ray.problems import load_problem
from pkb_ray.selfcheck.audit import digest
from pkb_ray.selfcheck.audit.records import (
    AuditPlan,
    CallTimes,
    KernelSummary,
    Ledger,
    QueuedTimes,
    RankAudit,
    SeedError,
)
from pkb_ray.selfcheck.audit.verdict import judge
from pkb_ray.selfcheck.ranks import ProblemRun, RankReport
from pkb_ray.selfcheck.truth import pack

PROBLEM = load_problem("builtin", "allreduce")
PLAN = AuditPlan(device="cuda", size="bench")
# 400 GB/s links, 4 TB/s HBM: allreduce's bench counts (64 MiB over the link) take 0.168 ms
PROFILE = HardwareProfile(fingerprint="test", peer_bw_gbps={"0->1": 400.0, "1->0": 400.0}, hbm_bw_gbps=4000.0,
                          bf16_tflops=800.0, fp32_tflops=400.0)
BENCH = PROBLEM.roofline(2, "bench")
ROOF_MS = BENCH.nvlink_bytes_per_rank / 400e9 * 1e3


def _check_payload(rank: int) -> dict:
    inputs = [PROBLEM.make_inputs(r, 2, 1234, "small") for r in range(2)]
    return {"warnings": [], "io": pack(inputs[rank], inputs[0][0] + inputs[1][0]), "tensors": 1,
            "same_for_two_seeds": False}


def _rank(rank: int, ms: float = 0.3, **over) -> RankAudit:
    small = lambda seed: PROBLEM.make_inputs(rank, 2, seed, "small")  # noqa: E731 - digests only
    base = RankAudit(
        check=_check_payload(rank),
        digests=(digest.digest_inputs(small(1)), digest.digest_inputs(small(2))),
        ledger=Ledger(sent_bytes=BENCH.nvlink_bytes_per_rank, recv_bytes=BENCH.nvlink_bytes_per_rank,
                      hbm_bytes=2 * BENCH.hbm_bytes_per_rank, ops=2),
        times=CallTimes(tuple([ms] * 20), tuple([0.02] * 20)),
        queued=QueuedTimes(tuple([ms * 0.98] * 5), False, 1.0),
        kernels=KernelSummary(calls=3, busy_ms=ms * 0.9, kernel_ms=ms * 0.9, nccl_ms=ms * 0.9, kernels=1, top=()),
        errors=(SeedError(1234, native=0.0, float64=0.2, max_abs=0.01), SeedError(4321, native=0.0, float64=0.1)),
    )
    return replace(base, **over)


def _judge(ranks: list[RankAudit], reasons=None, failure: str = ""):
    reports = {r: RankReport(True, ra, "", 1.0, r) for r, ra in enumerate(ranks)}
    return judge(PROBLEM, ProblemRun("allreduce", reports, failure), 2, PLAN, PROFILE, reasons)


def test_a_sound_problem_has_no_findings():
    a = _judge([_rank(0), _rank(1)])
    assert a.status == "ok" and a.findings == [] and a.correct == "matched", a.findings
    assert a.reference_ms == pytest.approx(0.3) and a.calls == 20 and a.self_ratio == pytest.approx(1.0)
    assert a.queued_ratio == pytest.approx(1 / 0.98) and a.busy_fraction == pytest.approx(0.9)
    assert a.roofline_ms == pytest.approx(ROOF_MS) and a.roofline_fraction == pytest.approx(ROOF_MS / 0.3)
    assert a.binding == "nvlink" and a.ratios["nvlink"] == 1.0 and a.ratios["hbm"] == 0.5
    assert a.tolerance["err_over_tol"] == 0.2 and a.tolerance["against"] == "float64"


def test_slowest_rank_sets_each_call():
    slow = _rank(1, ms=0.5)
    a = _judge([_rank(0), slow])
    assert a.reference_ms == pytest.approx(0.5)


def test_short_launch_bound_call_beating_its_roofline():
    fast = dict(ms=0.04, queued=QueuedTimes(tuple([0.01] * 5), False, 1.0))
    a = _judge([_rank(0, **fast), _rank(1, **fast)])
    kinds = {f.kind for f in a.findings}
    assert {"under_50us", "launch_bound", "roofline_high"} <= kinds and a.status == "finding"


def test_host_waits_and_an_idle_gpu():
    waits = dict(ms=1.0, queued=QueuedTimes(tuple([1.0] * 5), True, 1.0),
                 kernels=KernelSummary(calls=3, busy_ms=0.1, kernel_ms=0.1, nccl_ms=0.1, kernels=4, top=()))
    a = _judge([_rank(0, **waits), _rank(1, **waits)])
    assert a.host_waits and a.queued_ratio is None and a.busy_fraction == pytest.approx(0.1)
    assert {f.kind for f in a.findings} >= {"host_waits", "launch_bound"}


def test_a_reference_that_makes_groups_every_call():
    # upstream 48 makes its TP and FSDP groups inside solution(): 931 ms a call at ws 2, and it
    # read 2.33x against itself
    led = lambda r: replace(_rank(r).ledger, groups_made=2)  # noqa: E731
    a = _judge([_rank(0, ledger=led(0)), _rank(1, ledger=led(1))])
    found = [f for f in a.findings if f.kind == "makes_groups"]
    assert a.status == "finding" and len(found) == 1 and "makes 2 process group(s) in every call" in found[0].text


def test_counts_far_from_the_ledger_and_a_low_fraction():
    heavy = Ledger(sent_bytes=4 * BENCH.nvlink_bytes_per_rank, recv_bytes=4 * BENCH.nvlink_bytes_per_rank,
                   hbm_bytes=BENCH.hbm_bytes_per_rank / 4, matmul_flops=0.0)
    a = _judge([_rank(0, ms=0.5, ledger=heavy), _rank(1, ms=0.5, ledger=heavy)])
    kinds = {f.kind for f in a.findings}
    # 4x the link bytes; HBM counts 4x over the ledger's upper estimate
    assert {"counts_nvlink", "counts_hbm"} <= kinds and "roofline_low" not in kinds, a.findings
    assert a.ratios["nvlink"] == 0.25 and "counts_flops" not in kinds  # FLOPs are too few to matter
    # at 10 ms the HBM bytes take under 5% of the call: shown, not judged; 0.017 of the roofline
    b = _judge([_rank(0, ms=10.0, ledger=heavy), _rank(1, ms=10.0, ledger=heavy)])
    kinds = {f.kind for f in b.findings}
    assert {"counts_nvlink", "roofline_low"} <= kinds and "counts_hbm" not in kinds, b.findings
    assert b.ratios["hbm"] == 4.0


@pytest.mark.parametrize("native, exact, status, kind", [
    (0.0, 0.8, "finding", "tolerance_tight"),
    (0.0, 1.4, "finding", "tolerance_tight"),  # exact math is beyond the tolerance: too tight
    (1.5, 1.2, "FAIL", None),  # wrong in both precisions
    (1.5, 0.3, "ok", None),  # truth.py's own bf16 math is the less exact one: a note
    (0.0, 1e-5, "finding", "tolerance_loose"),
    (0.0, 0.0, "ok", None),  # exact data movement: no tolerance is loose
])
def test_tolerance_against_the_references_own_error(native, exact, status, kind):
    errs = (SeedError(1234, native=native, float64=exact),)
    a = _judge([_rank(0, errors=errs), _rank(1, errors=errs)])
    assert a.status == status, (a.status, a.message, a.findings)
    if kind:
        assert kind in {f.kind for f in a.findings}
    if native > 1 and status == "ok":
        assert any("truth.py in bfloat16" in n for n in a.notes)


def test_identical_ranks_and_constant_inputs():
    same = _rank(0)
    const = digest.digest_inputs((PROBLEM.make_inputs(0, 2, 1, "small")[0] * 0,))
    a = _judge([same, replace(_rank(1), digests=same.digests)])
    assert "inputs_identical_ranks" in {f.kind for f in a.findings}
    b = _judge([replace(_rank(0), digests=(const, const)), replace(_rank(1), digests=(const, const))])
    assert {"inputs_constant", "inputs_seed_identical"} <= {f.kind for f in b.findings}


def test_written_reasons_accept_findings():
    fast = dict(ms=0.04, queued=QueuedTimes(tuple([0.01] * 5), False, 1.0))
    reasons = {"allreduce": {"under_50us": "a decode-size all-reduce", "*": "known"}}
    a = _judge([_rank(0, **fast), _rank(1, **fast)], reasons)
    assert a.findings and not a.open_findings and a.status == "ok"
    assert {f.reason for f in a.findings} == {"a decode-size all-reduce", "known"}


def test_a_reason_with_no_finding_is_noted_as_stale():
    # the same fast call with a reason for a finding it does not have (counts_hbm)
    fast = dict(ms=0.04, queued=QueuedTimes(tuple([0.01] * 5), False, 1.0))
    reasons = {"allreduce": {"under_50us": "a decode-size all-reduce", "counts_hbm": "was so once"}}
    a = _judge([_rank(0, **fast), _rank(1, **fast)], reasons)
    assert "under_50us" not in {f.kind for f in a.open_findings}
    assert [n for n in a.notes if "no finding here" in n] == ["written reasons with no finding here: counts_hbm"]


def test_reasons_files_are_checked_and_merged(tmp_path):
    from pkb_ray.selfcheck.audit import load_reasons, merge_reasons

    bad = tmp_path / "bad.yaml"
    bad.write_text("allreduce:\n  launch_bund: a typo would leave launch_bound open\n")
    with pytest.raises(ValueError, match="launch_bund"):
        load_reasons(bad)
    bad.write_text("allreduce:\n  launch_bound: ''\n")
    with pytest.raises(ValueError, match="empty reason"):
        load_reasons(bad)
    bad.write_text("allreduce:\n  launch_bound: {at: [2, 4], reson: a typo}\n")
    with pytest.raises(ValueError, match="reson"):
        load_reasons(bad, 2)
    bad.write_text("allreduce:\n  launch_bound:\n    - {at: [2], reason: one}\n    - {at: [2, 4], reason: two}\n")
    with pytest.raises(ValueError, match="two reasons"):
        load_reasons(bad, 8)  # checked whatever world size is asked for
    merged = merge_reasons({"a": {"launch_bound": "shipped", "host_waits": "shipped"}},
                           {"a": {"launch_bound": "mine"}, "b": {"*": "mine"}})
    assert merged == {"a": {"launch_bound": "mine", "host_waits": "shipped"}, "b": {"*": "mine"}}


def test_a_reason_applies_at_the_world_sizes_it_was_measured_at(tmp_path):
    from pkb_ray.selfcheck.audit import load_reasons

    f = tmp_path / "r.yaml"
    f.write_text("a:\n  launch_bound: any world size\n"
                 "  host_waits: {at: [2, 4], reason: measured at 2 and 4}\n"
                 "  counts_nvlink:\n    - {at: [2], reason: 'at 2: 0.25'}\n    - {at: [4], reason: 'at 4: 0.19'}\n"
                 "b:\n  roofline_low: {at: [4], reason: only at 4}\n")
    assert load_reasons(f, 2) == {"a": {"launch_bound": "any world size", "host_waits": "measured at 2 and 4",
                                        "counts_nvlink": "at 2: 0.25"}}
    assert load_reasons(f, 4)["a"]["counts_nvlink"] == "at 4: 0.19" and load_reasons(f, 4)["b"]
    assert load_reasons(f, 8) == {"a": {"launch_bound": "any world size"}}


def test_shipped_reasons_name_real_problems_with_their_own_figures():
    import re

    from pkb_ray.problems.loader import load_problems
    from pkb_ray.selfcheck.audit import load_reasons, shipped_reasons_path

    for world in (2, 4, 8):
        reasons = load_reasons(shipped_reasons_path(), world)  # raises on a kind that is not a finding
        assert set(reasons) <= set(load_problems("builtin").problems)
        texts = [text for kinds in reasons.values() for text in kinds.values()]
        assert "*" not in {k for kinds in reasons.values() for k in kinds}  # every kind on its own
        # specific, not boilerplate: no text accepts two findings, and each cites a measured figure
        assert len(set(texts)) == len(texts)
        assert all(re.search(r"\d", t) and len(t) > 80 for t in texts), [t for t in texts if len(t) <= 80]


def test_a_failed_run_and_a_wrong_small_size_output():
    a = _judge([_rank(0), _rank(1)], failure="rank 1: ValueError: boom")
    assert a.status == "FAIL" and "boom" in a.message
    wrong = replace(_rank(1), check={**_check_payload(1), "io": pack(PROBLEM.make_inputs(1, 2, 1234, "small"),
                                                                          PROBLEM.make_inputs(1, 2, 1234, "small")[0])})
    b = _judge([_rank(0), wrong])
    assert b.status == "FAIL" and "disagrees with truth.py" in b.message


def test_the_gpu_table_fits_100_columns():
    import io

    from pkb_ray.selfcheck.audit import report

    fast = dict(ms=0.04, queued=QueuedTimes(tuple([0.01] * 5), False, 1.0))
    audits = [_judge([_rank(0), _rank(1)]), _judge([_rank(0, **fast), _rank(1, **fast)])]
    audits[1].problem = "vocab_parallel_logprob_topk_topp_backward_with_an_even_longer_name"
    out = io.StringIO()
    report.print_table(audits, "cuda", 2, console_file=out)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 100, out.getvalue()
    header = next(line for line in lines if line.startswith("problem"))
    assert all(h in header for h in ("ms", "queue", "busy", "roof", "self", "link", "err/tol"))
    assert any("under_50us" in line for line in lines)
    md = report.to_markdown(audits, {"device": "cuda", "world_size": 2, "size": "bench", "command": "c"})
    assert "| allreduce | ok | 0.3 | 1.02 | 0.90 |" in md
