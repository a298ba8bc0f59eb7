"""mode=agent: after each evaluated turn, feed the result back and ask for a revision.

A cell continues while its best turn is not correct-and-fast-enough and turns remain. The
conversation is rebuilt from the cell's turns each time, so nothing but the turns needs to
survive an interrupt: turn N's response comes from kernels_cache (keyed by turn, not by the
feedback text, which can differ in timing digits after a re-evaluation) and turn N's
evaluation from the sweep's turn log.

The feedback agent's stages (modes/agent.py) ask this module; it reads their cells through
the two protocols below, so that it names nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from pkb_ray.agent.redact import trim_log
from pkb_ray.records import EvalResult, FailureClass, Generation


class Turn(Protocol):
    """What feedback reads of one turn of a cell (modes/cell.py's Turn)."""

    @property
    def generation(self) -> Generation: ...

    def outcome(self) -> EvalResult | None: ...


class CellState(Protocol):
    """What feedback reads of a cell (modes/cell.py's CellState)."""

    @property
    def turns(self) -> Sequence[Turn]: ...

    @property
    def current(self) -> Turn: ...

MAX_LOG_CHARS = 3000
"""Compiler and runtime logs are trimmed to their most telling part (the first errors and
the tail); a model gains nothing from 200 lines of template instantiation notes."""


@dataclass
class AgentPolicy:
    turns: int
    target_speedup: float

    def good_enough(self, outcome: EvalResult | None) -> bool:
        """Correct, and at the target speedup. A target of 0 asks for correctness only: a
        correct result whose timing is `unmeasurable` (no speedup) meets it: another turn
        would not make it more correct."""
        if outcome is None or not outcome.correct:
            return False
        if self.target_speedup <= 0:
            return True
        return outcome.speedup is not None and outcome.speedup >= self.target_speedup

    def continue_cell(self, state: CellState) -> bool:
        if len(state.turns) >= self.turns:
            return False
        turn = state.current
        if turn.generation.failure is not None and turn.generation.failure != FailureClass.NO_CODE:
            return False  # the API refused or the key is bad: another turn will not help
        return not any(self.good_enough(t.outcome()) for t in state.turns)


def feedback_message(turn: Turn) -> str:
    """What the model is told about its last turn."""
    gen = turn.generation
    if gen.failure == FailureClass.NO_CODE:
        return (
            "Your answer had no ```python block defining `solution(...)`. Reply with the "
            "complete candidate module in one fenced python block."
        )
    ev = turn.outcome()
    if ev is None:
        return "The candidate could not be evaluated. Reply with a complete, corrected module."
    if ev.correct:
        parts = [
            "Your candidate is correct on every rank and trial.",
            f"Time per call: {ev.candidate_ms:.4f} ms (slowest rank, median); "
            f"the NCCL reference: {ev.reference_ms:.4f} ms; speedup {ev.speedup:.3f}x (the median of "
            "sample-by-sample ratios on the same inputs, so not exactly the ratio of the two medians)."
            if ev.candidate_ms and ev.reference_ms and ev.speedup
            else "",
            f"Roofline fraction: {ev.roofline_fraction:.3f} (1.0 = the hardware limit)."
            if ev.roofline_fraction
            else "",
            "Make it faster while keeping it correct; reply with the complete module.",
        ]
        return "\n".join(p for p in parts if p)
    failure = ev.failure.value if ev.failure else "unknown"
    parts = [f"Your candidate failed: {failure}. {ev.message}".strip()]
    if ev.failing_rank is not None or ev.failing_trial is not None:
        where = []
        if ev.failing_rank is not None:
            where.append(f"rank {ev.failing_rank}")
        if ev.failing_trial is not None:
            where.append(f"trial {ev.failing_trial}")
        err = f", max abs error {ev.max_abs_error:.4g}" if ev.max_abs_error is not None else ""
        parts.append(f"Worst mismatch at {' '.join(where)}{err}.")
    if ev.failure == FailureClass.COMPILE_ERROR and ev.build_log:
        parts.append("Compiler output:\n" + trim_log(ev.build_log, MAX_LOG_CHARS))
    elif ev.log and ev.failure not in (FailureClass.INCORRECT,):
        parts.append("Log:\n" + trim_log(ev.log, MAX_LOG_CHARS))
    if ev.flags:
        parts.append("The static check flagged: " + ", ".join(ev.flags))
    parts.append("Fix it and reply with the complete module in one fenced python block.")
    return "\n\n".join(parts)


def conversation(state: CellState) -> list[dict]:
    """The turns so far as chat messages after the initial prompt."""
    messages: list[dict] = []
    for turn in state.turns:
        messages.append({"role": "assistant", "content": turn.generation.response or ""})
        messages.append({"role": "user", "content": feedback_message(turn)})
    return messages
