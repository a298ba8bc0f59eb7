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
