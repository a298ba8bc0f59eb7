"""The parent's verdict on one problem: every rank's RankAudit, the problem's counts and the
node's hardware profile in, a ProblemAudit with its findings out.

The thresholds, and why:
- MIN_CALL_MS: below 50 us a call is mostly launch and synchronisation overhead, which no
  kernel can remove; a speedup there measures the harness.
- LAUNCH_RATIO: the call's event time over its time with launches queued. Above 1.25 the
  host's issue rate, not the GPU, sets a quarter of the time or more.
- MIN_BUSY: where the host waits inside the call (so launches cannot be queued), the GPU's
  busy time over the call's; below 0.6 the GPU idles 40% of the call.
- ROOFLINE_LOW / ROOFLINE_HIGH: a reference at under 5% of the roofline leaves the counts
  saying nothing (they miss most of the work, or the call is overhead-bound); above 1.0 the
  reference beats the least time the counts allow, so the counts are too high.
- COUNT_FACTOR: the counts and the ledger (the reference's own collectives and matmuls)
  agree within 2x either way for link bytes and FLOPs. A reference may move more than the
  least (a gather where a reduce-scatter would do): that is a written reason, not a pass.
- HBM_OVER: the ledger's HBM bytes are an upper estimate (every op on its own, no cache), so
  only counts above 1.5x it are a finding; a reference well above the counts is expected.
- RELEVANT_SHARE: a disagreement on one resource matters when that resource's time, by the
  counts or by the ledger, is at least 5% of the reference's time; on CPU there are no rates
  to weigh with, so count disagreements are shown and not judged.
- TOL_TIGHT / TOL_LOOSE: the reference's error against truth.py in float64 (in its own
  precision where the tolerance is zero), over the tolerance. An honest candidate rounds
  about as differently again, so above 0.5 it may be refused; below 0.001 (and nonzero) the
  tolerance is over 1000x what rounding needs (judged only at the dtype the tolerance was
  written for). The reference is wrong only where truth.py in its own precision and the
  float64 math both put it beyond the tolerance.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, replace
from typing import Any

from pkb_ray.selfcheck.audit.records import AuditPlan, Finding, ProblemAudit, RankAudit

MIN_CALL_MS = 0.05
LAUNCH_RATIO = 1.25
MIN_BUSY = 0.6
ROOFLINE_LOW = 0.05
ROOFLINE_HIGH = 1.0
COUNT_FACTOR = 2.0
HBM_OVER = 1.5
RELEVANT_SHARE = 0.05
TOL_TIGHT = 0.5
TOL_LOOSE = 0.001

FINDING_KINDS = (
    "no_truth", "truth_error", "tolerance_tight", "tolerance_loose", "int_mismatch",
    "under_50us", "launch_bound", "host_waits", "roofline_low", "roofline_high",
    "counts_nvlink", "counts_flops", "counts_hbm", "unmodelled_comm",
    "inputs_constant", "inputs_seed_identical", "inputs_identical_ranks", "makes_groups",
)
RESOURCES = ("nvlink", "hbm", "flops")

Reasons = dict[str, dict[str, str]]
"""problem -> finding kind (or `*`) -> the written reason that accepts it."""


def judge(problem, run, world_size: int, plan: AuditPlan, profile=None, reasons: Reasons | None = None) -> ProblemAudit:
    """The ProblemAudit of one ProblemRun (ranks.py) whose payloads are RankAudits."""
    from pkb_ray.selfcheck.check import verdict_of_run

    audit = ProblemAudit(problem.id, world_size, plan.device, plan.size, "ok", seconds=round(run.seconds, 2))
    if not run.ok:
        audit.status, audit.message, audit.correct = "FAIL", run.failure, "FAIL"
        return audit
    ranks: list[RankAudit] = [run.reports[r].payload for r in range(world_size)]
    # the self-check's verdict (small size, truth.py over every rank's output) as it always was
    small = verdict_of_run(problem, replace(run, reports={r: replace(rep, payload=rep.payload.check)
                                                    for r, rep in run.reports.items()}), world_size)
    audit.warnings = list(small.warnings)
    audit.stage_s = {k: max(ra.stage_s.get(k, 0.0) for ra in ranks) for k in ranks[0].stage_s}
    audit.notes = sorted({n for ra in ranks for n in ra.notes})
    if small.status == "FAIL":
        audit.status, audit.message, audit.correct = "FAIL", small.message, "FAIL"
        return audit
    audit.correct = "matched" if small.truth == "matched" else "no truth"
    if small.truth == "missing":
        audit.findings.append(Finding("no_truth", "no truth.py: outputs are not checked against the un-sharded math"))
    _inputs(audit, ranks)
    _groups(audit, ranks)
    _tolerance(audit, problem, plan, ranks)
    _timing(audit, ranks, plan)
    _counts(audit, problem, plan, ranks, profile)
    _apply_reasons(audit, reasons or {})
    if audit.status != "FAIL":
        audit.status = "finding" if audit.open_findings else "ok"
    return audit


def _groups(audit: ProblemAudit, ranks: list[RankAudit]) -> None:
    made = max((ra.ledger.groups_made for ra in ranks if ra.ledger is not None), default=0)
    if made:
        audit.findings.append(Finding("makes_groups", f"the reference makes {made} process group(s) in every call: "
                                      "its time is communicator set-up (and each call leaks one more), where a "
                                      "real workload makes its groups once"))


def _inputs(audit: ProblemAudit, ranks: list[RankAudit]) -> None:
    from pkb_ray.selfcheck.audit.digest import compare_digests

    seen = compare_digests([ra.digests for ra in ranks])
    audit.inputs = seen
    if seen["constant"]:
        audit.findings.append(Finding("inputs_constant", "constant input tensors at this size: " + ", ".join(
            f"input{p} (ranks {r})" for p, r in list(seen["constant"].items())[:4])))
    if seen["identical_seeds"]:
        audit.findings.append(Finding("inputs_seed_identical", "two seeds give the same inputs on every rank"))
    if seen["identical_ranks"]:
        audit.findings.append(Finding("inputs_identical_ranks", "every rank holds the same inputs"))


def _tolerance(audit: ProblemAudit, problem, plan: AuditPlan, ranks: list[RankAudit]) -> None:
    errors = [e for ra in ranks for e in ra.errors]
    if not errors:
        audit.skipped["tolerance"] = "no truth.py (upstream problems have none)" if problem.is_upstream \
            else "no seed was compared"
        return
    by_seed: dict[int, dict[str, Any]] = {}
    for e in errors:
        s = by_seed.setdefault(e.seed, {"native": None, "float64": None, "max_abs": None, "ints": 0, "notes": set()})
        for key, value in (("native", e.native), ("float64", e.float64), ("max_abs", e.max_abs)):
            if value is not None:
                s[key] = value if s[key] is None else max(s[key], value)
        s["ints"] += e.int_mismatches
        if e.note:
            s["notes"].add(e.note)
    native = [s["native"] for s in by_seed.values() if s["native"] is not None]
    exact = [s["float64"] for s in by_seed.values() if s["float64"] is not None]
    native_max, exact_max = max(native, default=None), max(exact, default=None)
    # a zero tolerance defines the result in the problem's own precision: float64 says nothing
    zero_tol = problem.spec.atol == 0 and problem.spec.rtol == 0
    use_exact = exact_max is not None and not zero_tol
    ratio = exact_max if use_exact else native_max
    notes = sorted({n for s in by_seed.values() for n in s["notes"]})
    audit.tolerance = {
        "atol": problem.spec.atol, "rtol": problem.spec.rtol, "seeds": sorted(by_seed),
        "err_over_tol": ratio, "against": "float64" if use_exact else "truth precision",
        "native_err_over_tol": native_max, "float64_err_over_tol": exact_max,
        "max_abs_err": max((s["max_abs"] for s in by_seed.values() if s["max_abs"] is not None), default=None),
        "int_mismatches": sum(s["ints"] for s in by_seed.values()), "notes": notes,
        "dtype": str(problem.spec.sizes[plan.size].get("dtype", problem.spec.dtype)),
    }
    if ratio is None:
        audit.findings.append(Finding("truth_error", "no seed compared with truth.py: " + "; ".join(notes)[:300]))
        return
    # wrong only when beyond the tolerance against truth.py in its own precision and in float64 alike
    if native_max is not None and native_max > 1.0 and (not use_exact or exact_max > 1.0):
        audit.status, audit.correct = "FAIL", "FAIL"
        audit.message = (f"at size {plan.size!r} the reference differs from truth.py by {native_max:.3g}x the "
                         f"tolerance" + (f" ({exact_max:.3g}x against float64)" if use_exact else ""))
    elif native_max is not None and native_max > 1.0:
        audit.notes.append(f"truth.py in {audit.tolerance['dtype']} differs from the reference by {native_max:.3g}x "
                           f"the tolerance; against float64 the reference is within it ({exact_max:.3g}x)")
    if ratio > 1.0 and audit.status != "FAIL":
        audit.findings.append(Finding("tolerance_tight", f"the reference's own error is {ratio:.2f}x the tolerance "
                                      f"against exact (float64) math: a candidate more exact than it is refused"))
    elif TOL_TIGHT < ratio <= 1.0:
        audit.findings.append(Finding("tolerance_tight", f"the reference uses {ratio:.2f} of the tolerance against "
                                      f"truth.py: an honest candidate that rounds differently may be refused"))
    elif 0 < ratio < TOL_LOOSE and audit.tolerance["dtype"] == problem.spec.dtype:
        audit.findings.append(Finding("tolerance_loose", f"the reference uses {ratio:.2g} of the tolerance: it is "
                                      f"{1 / ratio:.0f}x the reference's own error"))
    if audit.tolerance["int_mismatches"]:
        audit.findings.append(Finding("int_mismatch", f"{audit.tolerance['int_mismatches']} integer output elements "
                                      f"differ from truth.py over {len(by_seed)} seeds"))
    if notes:
        audit.notes.extend(notes)


def _per_call_max(series: list[tuple[float, ...]]) -> list[float]:
    """Each call's time on the slowest rank (ranks made the same number of calls)."""
    n = min(len(s) for s in series)
    return [max(s[i] for s in series) for i in range(n)]


def _timing(audit: ProblemAudit, ranks: list[RankAudit], plan: AuditPlan) -> None:
    if plan.device != "cuda":
        why = "GPU-only: CUDA events, launch queueing and CUPTI"
        audit.skipped.update(timing=why, launch=why, profiler=why, roofline="GPU-only: needs the node's measured "
                             "link, HBM and matmul rates")
        return
    if any(ra.times is None for ra in ranks):
        audit.skipped["timing"] = "not timed"
        return
    calls = _per_call_max([ra.times.event_ms for ra in ranks])
    audit.calls = len(calls)
    audit.reference_ms = statistics.median(calls)
    if len(calls) >= 4:
        audit.self_ratio = statistics.median(calls[0::2]) / statistics.median(calls[1::2])
    if audit.reference_ms < MIN_CALL_MS:
        audit.findings.append(Finding("under_50us", f"{audit.reference_ms * 1e3:.0f} us per call at size "
                                      f"{plan.size!r}: launch and synchronisation overhead dominate"))
    queued = [ra.queued for ra in ranks if ra.queued is not None]
    waited = any(q.host_waited for q in queued)
    audit.host_waits = waited
    if queued and not waited:
        q_ms = statistics.median(_per_call_max([q.event_ms for q in queued]))
        audit.queued_ratio = audit.reference_ms / q_ms if q_ms > 0 else None
        if audit.queued_ratio and audit.queued_ratio > LAUNCH_RATIO:
            audit.findings.append(Finding("launch_bound", f"{audit.reference_ms:.4f} ms per call, {q_ms:.4f} ms with "
                                          f"launches queued: the host's launches set the time"))
    if waited:
        audit.findings.append(Finding("host_waits", "the host waits on the GPU inside the call (a sync, .item(), "
                                      ".cpu() or a blocking wait): a real workload's step would not"))
    summaries = [ra.kernels for ra in ranks if ra.kernels is not None]
    if summaries:
        busiest = max(summaries, key=lambda k: k.busy_ms)
        audit.busy_fraction = busiest.busy_ms / audit.reference_ms if audit.reference_ms else None
        audit.kernels = {**asdict(busiest), "busy_ms_per_rank": [round(k.busy_ms, 5) for k in summaries]}
        if waited and audit.busy_fraction is not None and audit.busy_fraction < MIN_BUSY:
            audit.findings.append(Finding("launch_bound", f"the GPU is busy {audit.busy_fraction:.0%} of the call "
                                          f"(profiler): the host sets the time"))
    elif plan.profiler:
        audit.skipped["profiler"] = "no rank produced a profile (see notes)"
    else:
        audit.skipped["profiler"] = "turned off (--no-profiler)"


def _rates(profile, world_size: int, dtype: str) -> dict[str, float | None]:
    """Bytes or FLOPs per ms of each resource (None where the profile has no figure)."""
    if profile is None:
        return dict.fromkeys(RESOURCES)
    peer = profile.min_peer_bw_gbps(world_size)
    # the matmul rate engine/roofline.py takes for the dtype
    tflops = profile.bf16_tflops if dtype.lower() in ("bfloat16", "float16") else profile.fp32_tflops
    return {"nvlink": peer * 1e6 if peer else None, "hbm": profile.hbm_bw_gbps * 1e6 or None,
            "flops": tflops * 1e9 or None}


def _counts(audit: ProblemAudit, problem, plan: AuditPlan, ranks: list[RankAudit], profile) -> None:
    ledgers = [ra.ledger for ra in ranks if ra.ledger is not None]
    if ledgers:
        audit.measured = {"nvlink": max(lg.link_bytes for lg in ledgers), "hbm": max(lg.hbm_bytes for lg in ledgers),
                          "flops": max(lg.flops for lg in ledgers),
                          "matmul_flops": max(lg.matmul_flops for lg in ledgers),
                          "ops": max(lg.ops for lg in ledgers)}
        unmodelled = sorted({u for lg in ledgers for u in lg.unmodelled})
        if unmodelled:
            audit.findings.append(Finding("unmodelled_comm", "ops the ledger cannot count: " + ", ".join(unmodelled[:4])))
        audit.collectives = list(ledgers[0].collectives[:8])
    counts = problem.roofline(audit.world_size, plan.size)
    if counts is None:
        audit.skipped["counts"] = "the problem has no roofline counts (upstream problems publish none)"
        return
    audit.counts = {"nvlink": counts.nvlink_bytes_per_rank, "hbm": counts.hbm_bytes_per_rank,
                    "flops": counts.flops_per_rank}
    for r in RESOURCES:
        c, m = audit.counts[r], audit.measured.get(r)
        audit.ratios[r] = (c / m if m else (None if c == 0 else float("inf"))) if m is not None else None
    dtype = str(problem.spec.sizes[plan.size].get("dtype", problem.spec.dtype))
    if plan.device != "cuda" or profile is None:
        if plan.device == "cuda":
            audit.skipped["roofline"] = "no hardware profile (see notes)"
        return
    from pkb_ray.engine.roofline import roofline_ms

    audit.roofline_ms = roofline_ms(counts, profile, audit.world_size, dtype)
    rates = _rates(profile, audit.world_size, dtype)
    count_ms = {r: audit.counts[r] / rates[r] if rates[r] else 0.0 for r in RESOURCES}
    audit.binding = max(count_ms, key=count_ms.get) if any(count_ms.values()) else ""
    if audit.measured:
        measured_ms = {r: audit.measured[r] / rates[r] if rates[r] else 0.0 for r in RESOURCES}
        audit.measured["roofline_ms"] = max(measured_ms.values())
    if audit.reference_ms and audit.roofline_ms is not None:
        audit.roofline_fraction = audit.roofline_ms / audit.reference_ms
        if audit.roofline_fraction < ROOFLINE_LOW:
            audit.findings.append(Finding("roofline_low", f"the reference runs at {audit.roofline_fraction:.3f} of the "
                                          f"roofline ({audit.roofline_ms:.4f} of {audit.reference_ms:.4f} ms)"))
        elif audit.roofline_fraction > ROOFLINE_HIGH:
            audit.findings.append(Finding("roofline_high", f"the reference beats the roofline "
                                          f"({audit.roofline_fraction:.2f}): the counts claim more work than it does"))
    if not audit.measured or not audit.reference_ms:
        return
    floor_ms = RELEVANT_SHARE * audit.reference_ms
    for r in RESOURCES:
        c, m, ratio = audit.counts[r], audit.measured[r], audit.ratios[r]
        if max(count_ms[r], measured_ms[r]) < floor_ms or ratio is None:
            continue
        low = 1 / COUNT_FACTOR
        high = HBM_OVER if r == "hbm" else COUNT_FACTOR
        if ratio > high or (r != "hbm" and ratio < low):
            audit.findings.append(Finding(f"counts_{r}", f"{r}: the counts say {_si(c)}, the reference's ledger "
                                          f"{_si(m)} (x{ratio:.2f}; agreement is within "
                                          f"{'1/%g-%g' % (COUNT_FACTOR, high) if r != 'hbm' else '<= %g' % high})"))


def _si(x: float) -> str:
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def _apply_reasons(audit: ProblemAudit, reasons: Reasons) -> None:
    mine = reasons.get(audit.problem, {})
    if not mine:
        return
    audit.findings = [replace(f, reason=mine.get(f.kind, mine.get("*", ""))) for f in audit.findings]
    # a reason whose finding is gone is stale (the problem was fixed, or the node differs): say
    # so on GPUs, where every kind can be judged (a CPU audit never times or weighs counts)
    found = {f.kind for f in audit.findings}
    stale = sorted(k for k in mine if k != "*" and k not in found)
    if stale and audit.device == "cuda":
        audit.notes.append("written reasons with no finding here: " + ", ".join(stale))
