"""Builders for records used across tests (real dataclasses, no mocks)."""

from __future__ import annotations

from pkb_ray.records import (
    CellKey,
    CellResult,
    CellStatus,
    EvalResult,
    FailureClass,
    Generation,
    status_of,
)


def make_result(model="m", problem="p", attempt=1, correct=True, speedup=1.5, cost=0.01,
                failure=None, mode="zeroshot", ci=None, flags=(), device="cpu",
                category="collective") -> CellResult:
    key = CellKey(model, problem, attempt, mode)
    gen = Generation(model=model, problem=problem, attempt=attempt, prompt="PROMPT",
                     response="RESPONSE", candidate_source="def solution(x):\n    return x\n",
                     cost_usd=cost, prompt_tokens=10, completion_tokens=20, latency_s=0.5)
    ev = EvalResult(correct=correct, failure=None if correct else (failure or FailureClass.INCORRECT),
                    compiled=True, candidate_ms=1.0, reference_ms=speedup,
                    speedup=speedup if correct else None, world_size=2, device="cpu",
                    size="small", hardware_fingerprint="cpu-test", harness_version="t1",
                    log="eval log", speedup_ci_low=ci[0] if ci else None,
                    speedup_ci_high=ci[1] if ci else None, flags=list(flags))
    ev.device = device
    status = CellStatus.CORRECT if correct else status_of(ev)
    return CellResult(key=key, status=status, generation=gen, evaluation=ev,
                      failure=ev.failure, world_size=2, hardware_fingerprint="cpu-test",
                      harness_version="t1", category=category)


def figures_or_skip(*results) -> None:
    """Skip, naming the reason, where an evaluation gave no figure because the host was
    loaded by other processes (the engine refuses a figure there: timing/conditions.py); a
    test that compares figures has nothing to compare then. Results or their JSON dicts."""
    import pytest

    for r in results:
        flags = r["flags"] if isinstance(r, dict) else r.flags
        speedup = r["speedup"] if isinstance(r, dict) else r.speedup
        if speedup is None and "loaded_host" in flags:
            message = r.get("message", "") if isinstance(r, dict) else r.message
            pytest.skip(f"no figure to compare: {message[-200:]}")
