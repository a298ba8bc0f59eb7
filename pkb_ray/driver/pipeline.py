"""The sweep pipeline: generate -> build -> evaluate -> record, overlapped.

All in-flight work is a set of handles (Ray object refs on a cluster) that one `wait` loop
drains, so later
cells generate while earlier ones build and evaluate, and an evaluator is handed the next
built candidate the moment it frees up. Work in flight is bounded at each stage:
generations by `max_inflight_generations`, and built candidates waiting for an evaluator
by `max_queued_builds` (when that queue is full no new generation starts, so a slow GPU
pool does not pile up candidates or spend API money far ahead of evaluation).

An evaluator that dies (node removed, actor crash) costs nothing recorded: its cell goes
back to the front of the evaluation queue and the evaluator leaves the pool.

The pipeline imports no Ray: it is handed the stages (which submit work and return
handles) and `wait`/`get` (which resolve handles; driver/ray_runtime.py gives Ray's), so
its scheduling is tested with plain functions (tests/driver/test_pipeline.py).
"""

from __future__ import annotations

import collections
import logging
from typing import Any, Callable, Protocol

from pkb_ray.engine import BuildResult
from pkb_ray.modes import CellState, Turn
from pkb_ray.records import CellKey, EvalResult, FailureClass, Generation
from pkb_ray.store.harness_tries import MAX_TRIES as MAX_HARNESS_TRIES

log = logging.getLogger(__name__)

MAX_EVALUATOR_LOSSES_PER_CELL = 3
"""A candidate that takes down this many evaluators is recorded as a runtime error."""


class StageLost(Exception):
    """`get` raises this when the actor that ran a stage died (node removed, crash)."""


class StageFailed(Exception):
    """`get` raises this when a stage's task raised (the harness failed, not the candidate)."""


Wait = Callable[[list[Any], float], list[Any]]
"""wait(handles, timeout_s) -> the handles that are done (at least one unless it timed out)."""
Get = Callable[[Any], Any]
"""get(handle) -> the stage's value; raises StageLost or StageFailed."""


class Stages(Protocol):
    """The stage implementations the pipeline drives: each submits work and returns a handle
    that the pipeline's `wait`/`get` resolve."""

    def generate(self, state: CellState) -> Any: ...

    def build(self, state: CellState) -> Any | None:
        """A ref to a BuildResult, or None when this device needs no build stage."""

    def evaluate(self, evaluator: Any, state: CellState) -> Any: ...

    def ping(self, evaluator: Any) -> Any:
        """A cheap call that succeeds once a restarted evaluator is back."""

    def continue_cell(self, state: CellState) -> bool:
        """After a turn ends: True to generate another turn (agent mode). No side effects:
        the pipeline's `turn_done` callback, owned by whoever owns the store, records it."""


class Pipeline:
    def __init__(
        self,
        cells: list[CellKey | CellState],
        stages: Stages,
        evaluators: list[Any],
        record: Callable[[CellState], None],
        defer: Callable[[CellState, str], None],
        wait: Wait,
        get: Get,
        max_inflight_generations: int = 64,
        max_queued_builds: int = 16,
        replace_evaluators: Callable[[], list[Any]] | None = None,
        tick: Callable[[], None] | None = None,
        turn_done: Callable[[CellState], None] | None = None,
        spent: Callable[[Generation], None] | None = None,
        harness_tries: Callable[[CellState, str], int] | None = None,
        same_node: Callable[[Any, Any], bool] | None = None,
    ) -> None:
        """`turn_done(state)`: called once a turn has its outcome, before asking the stages
        whether the cell continues (agent mode writes the turn log there). `spent(gen)`:
        called with every generation as it arrives, so a budget sees spend as it happens
        (an agent's cell is recorded only when its last turn is, many turns later).
        `same_node(a, b)`: whether two evaluators are slots of one node actor (GPU groups,
        driver/slots.py): when one is lost, the others idle in the pool are pinged before
        they get work."""
        self.todo = collections.deque(c if isinstance(c, CellState) else CellState(c) for c in cells)
        self.stages = stages
        self.free = collections.deque(evaluators)
        self.record = record
        self.defer = defer
        self.max_gen = max(1, max_inflight_generations)
        self.max_ready = max(1, max_queued_builds)
        self.replace_evaluators = replace_evaluators
        self.tick = tick or (lambda: None)
        self.turn_done = turn_done or (lambda state: None)
        self.spent = spent or (lambda gen: None)
        self.harness_tries = harness_tries
        self.same_node = same_node or (lambda a, b: a is b)
        self.wait = wait
        self.get = get
        self.ready: collections.deque[CellState] = collections.deque()
        self.inflight: dict[Any, tuple[str, CellState, Any]] = {}
        self.regenerate: collections.deque[CellState] = collections.deque()

    # -- bookkeeping ---------------------------------------------------------------
    def _n(self, stage: str) -> int:
        return sum(1 for s, _, _ in self.inflight.values() if s == stage)

    def _finish(self, state: CellState) -> None:
        self.record(state)

    def _defer(self, state: CellState, reason: str) -> None:
        self.defer(state, reason)

    # -- submission ----------------------------------------------------------------
    def _fill(self) -> None:
        # Evaluations first: a free evaluator is the most expensive thing to leave idle.
        while self.free and self.ready:
            evaluator = self.free.popleft()
            state = self.ready.popleft()
            self.inflight[self.stages.evaluate(evaluator, state)] = ("eval", state, evaluator)
        # New generations, only while the queue of built candidates has room.
        while (
            (self.regenerate or self.todo)
            and self._n("gen") < self.max_gen
            and len(self.ready) + self._n("build") < self.max_ready
        ):
            state = self.regenerate.popleft() if self.regenerate else self.todo.popleft()
            self.inflight[self.stages.generate(state)] = ("gen", state, None)

    # -- completion ----------------------------------------------------------------
    def _on_generated(self, state: CellState, gen: Generation) -> None:
        self.spent(gen)
        state.turns.append(Turn(gen))
        if gen.failure is not None:
            if gen.failure.is_transient:
                self._defer(state, f"{gen.failure.value}: {gen.message}")
            else:
                self._finish(state)
            return
        if gen.candidate_source is None:
            # Nothing to evaluate and nothing wrong: the source ended the cell (tools mode:
            # the episode ended after its submission was evaluated).
            self._finish(state)
            return
        ref = self.stages.build(state)
        if ref is None:
            self.ready.append(state)
        else:
            self.inflight[ref] = ("build", state, None)

    def _on_built(self, state: CellState, outcome: BuildResult) -> None:
        state.current.build = outcome
        if outcome.ok:
            self.ready.append(state)
        else:
            self._after_turn(state)

    def _on_evaluated(self, state: CellState, result: Any) -> None:
        evaluation = result if isinstance(result, EvalResult) else result.evaluation
        if evaluation is not None and evaluation.failure is not None and evaluation.failure.is_transient:
            # The harness failed (a sandbox that did not start on a loaded node), not the
            # candidate: never recorded as the cell's result nor shown to a model as a
            # tool's; a re-run evaluates it again (tools mode: the journal has the call's
            # start without its result, so the call runs again).
            tries = (self.harness_tries(state, evaluation.message)
                     if self.harness_tries is not None and evaluation.failure == FailureClass.HARNESS_ERROR else 0)
            if tries < MAX_HARNESS_TRIES:
                self._defer(state, f"{evaluation.failure.value}: {evaluation.message}")
                return
            evaluation.message = f"{evaluation.message} (harness_error on {tries} tries: recorded, not retried)"
        if isinstance(result, EvalResult):
            state.current.evaluation = result
        else:  # tools mode's evaluators return the tool's whole outcome
            state.current.tool, state.current.evaluation = result, result.evaluation
        self._after_turn(state)

    def _after_turn(self, state: CellState) -> None:
        self.turn_done(state)
        if self.stages.continue_cell(state):
            self.regenerate.append(state)
        else:
            self._finish(state)

    def _on_evaluator_lost(self, state: CellState, evaluator: Any, exc: BaseException) -> None:
        state.evaluator_losses += 1
        log.warning("evaluator lost while evaluating %s: %s", state.key.cell_id, exc)
        if state.evaluator_losses >= MAX_EVALUATOR_LOSSES_PER_CELL:
            from pkb_ray.engine import evaluator_lost

            state.current.evaluation = evaluator_lost(
                f"the evaluator died {state.evaluator_losses} times on this candidate", repr(exc.__cause__ or exc))
            self._after_turn(state)
        else:
            self.ready.appendleft(state)
        # A restartable actor comes back (max_restarts); a dead one (its node is gone)
        # fails the ping and leaves the pool. Its node's other slots that sit idle are as
        # lost: handed a cell, each would charge that cell one more loss (three make it a
        # runtime_error) without running it. They wait for their own ping.
        for sibling in [e for e in self.free if self.same_node(e, evaluator)]:
            self.free.remove(sibling)
            self.inflight[self.stages.ping(sibling)] = ("ping", state, sibling)
        self.inflight[self.stages.ping(evaluator)] = ("ping", state, evaluator)

    def _on_ping_failed(self) -> None:
        live = any(s in ("eval", "ping") for s, _, _ in self.inflight.values())
        if not self.free and not live and self.replace_evaluators:
            self.free.extend(self.replace_evaluators())

    # -- main loop -----------------------------------------------------------------
    def evaluating(self) -> list[tuple[Any, CellState]]:
        """(evaluator, cell) of every evaluation in flight."""
        return [(ev, state) for s, state, ev in self.inflight.values() if s == "eval"]

    def counts(self) -> tuple[int, int, int]:
        """(generating, building, built and waiting for an evaluator)."""
        return self._n("gen"), self._n("build"), len(self.ready)

    def done(self) -> bool:
        return not (self.todo or self.ready or self.inflight or self.regenerate)

    def run(self) -> None:
        self._fill()
        while not self.done():
            if not self.inflight:
                if self.ready and not self.free:
                    for state in list(self.ready):
                        self._defer(state, "no_evaluator: no evaluator is alive and none could be started")
                    self.ready.clear()
                    continue
                self._fill()
                if not self.inflight and not self.ready:
                    continue  # nothing was left to submit: done() ends the loop
            for handle in self.wait(list(self.inflight), 1.0):
                self._complete(handle)
            self._fill()
            self.tick()

    def _complete(self, handle: Any) -> None:
        stage, state, evaluator = self.inflight.pop(handle)
        try:
            value = self.get(handle)
        except StageLost as exc:
            if stage == "ping":
                self._on_ping_failed()
            elif stage == "eval":
                self._on_evaluator_lost(state, evaluator, exc)
            else:
                self._defer(state, f"harness_error: {stage} actor died: {exc}")
            return
        except StageFailed as exc:
            if stage == "ping":
                self._on_ping_failed()
                return
            self._defer(state, f"harness_error: {stage} task failed: {exc}")
            if stage == "eval":
                self.free.append(evaluator)
            return
        if stage == "ping":
            self.free.append(evaluator)
        elif stage == "gen":
            self._on_generated(state, value)
        elif stage == "build":
            self._on_built(state, value)
        else:
            self.free.append(evaluator)
            self._on_evaluated(state, value)
