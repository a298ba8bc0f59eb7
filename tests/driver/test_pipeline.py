"""The pipeline's scheduling, driven without Ray: stages that return plain handles and a
`wait`/`get` that resolve them on a simulated clock (each handle lands at its submit time
plus the stage's duration). What the sweep relies on: cells start in plan order, evaluation
goes to a free evaluator first, work in flight stays bounded, and a lost evaluator costs no
cell (its cell goes back to the queue, a dead evaluator leaves the pool, a fresh pool is
started when none is left)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from pkb_ray.driver.pipeline import (
    MAX_EVALUATOR_LOSSES_PER_CELL,
    CellState,
    Pipeline,
    StageFailed,
    StageLost,
)
from pkb_ray.engine.build import BuildResult
from pkb_ray.records import CellKey, EvalResult, FailureClass, Generation


@pytest.fixture(autouse=True)
def no_ray(monkeypatch):
    """Any `import ray` inside the pipeline fails while these tests run."""
    for name in [n for n in sys.modules if n == "ray" or n.startswith("ray.")] + ["ray"]:
        monkeypatch.setitem(sys.modules, name, None)


@dataclass(eq=False)
class Handle:
    stage: str
    cell: str
    lands_at: float
    seq: int
    value: Any = None
    error: Exception | None = None


@dataclass(eq=False)
class Evaluator:
    name: str
    dies_on: set[str] = field(default_factory=set)
    """Cells whose evaluation kills this evaluator."""
    restarts: bool = False
    """A restartable actor answers its ping after a death; a lost node does not."""
    dead: bool = False


class Sim:
    """Stages, wait and get on a simulated clock; records what happened, in order."""

    def __init__(self, gen_s=1.0, build_s=1.0, eval_s=1.0, builds=True, failed_gens=()):
        self.now = 0.0
        self.seq = 0
        self.durations = {"gen": gen_s, "build": build_s, "eval": eval_s, "ping": 0.1}
        self.builds = builds
        self.failed_gens = set(failed_gens)
        self.pending: set[Handle] = set()
        self.events: list[tuple[str, str]] = []  # (stage submitted, cell)
        self.evaluated_on: list[tuple[str, str]] = []  # (cell, evaluator) per finished evaluation
        self.max_generating = 0
        self.max_queue_at_new_generation = 0
        self.max_unevaluated = 0
        self.built_not_evaluating = 0

    def _submit(self, stage: str, cell: str, value=None, error=None) -> Handle:
        self.seq += 1
        handle = Handle(stage, cell, self.now + self.durations[stage], self.seq, value, error)
        self.pending.add(handle)
        self.events.append((stage, cell))
        generating = sum(1 for h in self.pending if h.stage == "gen")
        building = sum(1 for h in self.pending if h.stage == "build")
        self.max_generating = max(self.max_generating, generating)
        if stage == "gen":  # the built queue (and what is building) as the generation starts
            self.max_queue_at_new_generation = max(self.max_queue_at_new_generation,
                                                   self.built_not_evaluating + building)
        self.max_unevaluated = max(self.max_unevaluated,
                                   generating + building + self.built_not_evaluating)
        return handle

    # -- Stages ------------------------------------------------------------------------
    def generate(self, state: CellState) -> Handle:
        k = state.key
        failure = FailureClass.RATE_LIMITED if k.problem in self.failed_gens else None
        gen = Generation(model=k.model, problem=k.problem, attempt=k.attempt,
                         candidate_source="def solution(x):\n    return x\n", failure=failure)
        return self._submit("gen", k.cell_id, gen)

    def build(self, state: CellState) -> Handle | None:
        if not self.builds:
            self._built()
            return None
        return self._submit("build", state.key.cell_id, BuildResult(ok=True))

    def _built(self) -> None:
        self.built_not_evaluating += 1

    def evaluate(self, evaluator: Evaluator, state: CellState) -> Handle:
        assert not evaluator.dead, f"{state.key.cell_id} was sent to dead {evaluator.name}"
        self.built_not_evaluating -= 1
        cell = state.key.cell_id
        if cell in evaluator.dies_on:
            evaluator.dead = not evaluator.restarts
            return self._submit("eval", cell, error=StageLost(f"{evaluator.name} died"))
        self.evaluated_on.append((cell, evaluator.name))
        return self._submit("eval", cell, EvalResult(correct=True, speedup=1.0))

    def ping(self, evaluator: Evaluator) -> Handle:
        error = StageLost(f"{evaluator.name} is gone") if evaluator.dead else None
        return self._submit("ping", evaluator.name, error=error)

    def continue_cell(self, state: CellState) -> bool:
        return False

    # -- wait / get --------------------------------------------------------------------
    def wait(self, handles: list[Handle], timeout_s: float) -> list[Handle]:
        first = min(handles, key=lambda h: (h.lands_at, h.seq))
        self.now = max(self.now, first.lands_at)
        return [first]

    def get(self, handle: Handle) -> Any:
        self.pending.discard(handle)
        if handle.stage == "build" and handle.error is None:
            self._built()
        if handle.error is not None:
            raise handle.error
        return handle.value


def cells(n: int, model: str = "m") -> list[CellKey]:
    return [CellKey(model, f"p{i}", 1) for i in range(n)]


def run(sim: Sim, keys, evaluators, **kwargs):
    recorded: list[CellState] = []
    deferred: list[tuple[str, str]] = []
    pipeline = Pipeline(keys, sim, evaluators, record=recorded.append,
                        defer=lambda s, why: deferred.append((s.key.cell_id, why)),
                        wait=sim.wait, get=sim.get, **kwargs)
    pipeline.run()
    assert pipeline.done()
    return recorded, deferred


def test_cells_start_in_plan_order_and_each_is_recorded_once():
    sim = Sim()
    keys = cells(12)
    recorded, deferred = run(sim, keys, [Evaluator("e0"), Evaluator("e1")],
                             max_inflight_generations=4, max_queued_builds=4)
    assert deferred == []
    generated = [cell for stage, cell in sim.events if stage == "gen"]
    assert generated == [k.cell_id for k in keys]
    # Equal stage times and FIFO queues: cells land in the order they started.
    assert [s.key.cell_id for s in recorded] == [k.cell_id for k in keys]
    assert all(s.current.evaluation.correct for s in recorded)


def test_evaluation_is_bounded_by_evaluators_and_overlaps_generation():
    sim = Sim(gen_s=1.0, build_s=1.0, eval_s=5.0)
    recorded, _ = run(sim, cells(10), [Evaluator("e0"), Evaluator("e1")],
                      max_inflight_generations=8, max_queued_builds=3)
    assert len(recorded) == 10
    # Two evaluators of 5 s each: 10 cells need 5 rounds, and generation hides under them.
    assert sim.now == pytest.approx(2.0 + 5 * 5.0)
    assert {ev for _, ev in sim.evaluated_on} == {"e0", "e1"}


@pytest.mark.parametrize("builds", [True, False])
def test_work_in_flight_stays_bounded(builds):
    # A slow evaluator and fast generation: without the bounds every cell would be generated
    # (and paid for) at once.
    sim = Sim(gen_s=0.5, build_s=0.5, eval_s=10.0, builds=builds)
    recorded, _ = run(sim, cells(30), [Evaluator("e0")],
                      max_inflight_generations=4, max_queued_builds=3)
    assert len(recorded) == 30
    assert sim.max_generating == 4
    # A generation starts only while fewer than max_queued_builds candidates are built (or
    # building) and waiting for an evaluator ...
    assert sim.max_queue_at_new_generation < 3
    # ... so candidates not yet evaluated stay within both bounds together, not all 30.
    assert sim.max_unevaluated <= 4 + 3


def test_a_transient_generation_failure_is_deferred_not_recorded():
    sim = Sim(failed_gens={"p1"})
    recorded, deferred = run(sim, cells(3), [Evaluator("e0")])
    assert [s.key.problem for s in recorded] == ["p0", "p2"]
    assert deferred == [("m/p1/1/zeroshot", "rate_limited: ")]


def test_a_dead_evaluator_leaves_the_pool_and_its_cell_is_requeued():
    sim = Sim()
    keys = cells(6)
    doomed = Evaluator("lost-node", dies_on={keys[0].cell_id})
    recorded, deferred = run(sim, keys, [doomed, Evaluator("e1")])
    assert deferred == []
    assert sorted(s.key.cell_id for s in recorded) == sorted(k.cell_id for k in keys)
    assert len(recorded) == 6  # each cell once: the lost evaluation was not recorded
    assert {ev for _, ev in sim.evaluated_on} == {"e1"}
    lost = next(s for s in recorded if s.key == keys[0])
    assert lost.evaluator_losses == 1 and lost.current.evaluation.correct


def test_when_every_evaluator_is_lost_a_fresh_pool_is_started():
    sim = Sim()
    keys = cells(4)
    started: list[Evaluator] = []

    def replace() -> list[Evaluator]:
        started.append(Evaluator(f"fresh{len(started)}"))
        return [started[-1]]

    recorded, deferred = run(sim, keys, [Evaluator("only", dies_on={keys[1].cell_id})],
                             replace_evaluators=replace)
    assert deferred == [] and len(recorded) == 4 and len(started) == 1
    assert (keys[1].cell_id, "fresh0") in sim.evaluated_on


def test_no_evaluator_left_and_none_to_start_defers_the_built_cells():
    sim = Sim()
    keys = cells(3)
    recorded, deferred = run(sim, keys, [Evaluator("only", dies_on={keys[0].cell_id})])
    assert recorded == []
    assert sorted(c for c, _ in deferred) == sorted(k.cell_id for k in keys)
    assert all(why.startswith("no_evaluator:") for _, why in deferred)


def test_a_candidate_that_keeps_killing_evaluators_is_a_runtime_error():
    sim = Sim()
    keys = cells(2)
    killer = keys[0].cell_id
    restartable = [Evaluator(f"e{i}", dies_on={killer}, restarts=True) for i in range(2)]
    recorded, deferred = run(sim, keys, restartable)
    assert deferred == []
    cell = next(s for s in recorded if s.key.cell_id == killer)
    assert cell.evaluator_losses == MAX_EVALUATOR_LOSSES_PER_CELL
    assert cell.current.evaluation.failure == FailureClass.RUNTIME_ERROR
    assert "StageLost" in cell.current.evaluation.log


def test_a_failed_task_is_deferred_and_its_evaluator_kept():
    sim = Sim()
    keys = cells(3)
    original = sim.evaluate

    def evaluate(evaluator, state):
        handle = original(evaluator, state)
        if state.key == keys[0]:
            handle.error = StageFailed("task raised")
        return handle

    sim.evaluate = evaluate
    recorded, deferred = run(sim, keys, [Evaluator("e0")])
    assert deferred == [(keys[0].cell_id, "harness_error: eval task failed: task raised")]
    assert [s.key for s in recorded] == keys[1:]


def test_a_harness_error_result_is_deferred_not_recorded():
    """An evaluation that ends in harness_error (the sandbox did not start) is the harness's
    failure: the cell is left for a re-run, no turn is logged, and the evaluator goes on."""
    sim = Sim()
    keys = cells(3)
    original = sim.evaluate
    turns_done = []

    def evaluate(evaluator, state):
        handle = original(evaluator, state)
        if state.key == keys[0]:
            handle.value = EvalResult(failure=FailureClass.HARNESS_ERROR, message="the sandbox did not start")
        return handle

    sim.evaluate = evaluate
    recorded, deferred = run(sim, keys, [Evaluator("e0")], turn_done=lambda st: turns_done.append(st.key))
    assert deferred == [(keys[0].cell_id, "harness_error: the sandbox did not start")]
    assert [s.key for s in recorded] == keys[1:] and turns_done == keys[1:]


def test_a_cell_that_stays_harness_error_is_recorded_with_its_count(tmp_path):
    """Three runs in a row end in harness_error on one cell (tries counted in a file that
    outlives each run): the first two defer it, the third records it, naming the count.
    Without the count a candidate that looks like a harness fault is never shown."""
    from pkb_ray.store.harness_tries import MAX_TRIES, HarnessTries

    keys = cells(2)
    outcomes = []
    for _run in range(MAX_TRIES):
        sim = Sim()
        original = sim.evaluate

        def evaluate(evaluator, state, original=original):
            handle = original(evaluator, state)
            if state.key == keys[0]:
                handle.value = EvalResult(failure=FailureClass.HARNESS_ERROR, message="judge died")
            return handle

        sim.evaluate = evaluate
        tries = HarnessTries(tmp_path / "harness_tries.jsonl")  # each run opens it anew
        outcomes.append(run(sim, keys[:1], [Evaluator("e0")],
                            harness_tries=lambda st, msg, t=tries: t.add(st.record_id, msg)))
    assert [d for _, d in outcomes] == [[(keys[0].cell_id, "harness_error: judge died")]] * (MAX_TRIES - 1) + [[]]
    (last,) = outcomes[-1][0]
    assert last.current.evaluation.failure == FailureClass.HARNESS_ERROR
    assert f"harness_error on {MAX_TRIES} tries" in last.current.evaluation.message
    assert HarnessTries(tmp_path / "harness_tries.jsonl").count(CellState(keys[0]).record_id) == MAX_TRIES


def test_turn_done_sees_every_turn_before_the_cell_continues():
    class TwoTurns(Sim):
        def continue_cell(self, state):
            return len(state.turns) < 2

    sim = TwoTurns()
    seen: list[tuple[str, int, bool]] = []
    recorded, _ = run(sim, cells(2), [Evaluator("e0")],
                      turn_done=lambda s: seen.append((s.key.problem, s.turn, s.current.outcome() is not None)))
    assert sorted(seen) == [("p0", 1, True), ("p0", 2, True), ("p1", 1, True), ("p1", 2, True)]
    assert all(len(s.turns) == 2 for s in recorded)


def test_a_lost_evaluation_goes_back_to_the_front_of_the_queue():
    # Fast generation, slow evaluation: cells are built and waiting when p0's evaluator
    # dies; p0 is evaluated next, ahead of them, once the restarted evaluator answers.
    sim = Sim(gen_s=0.1, build_s=0.1, eval_s=5.0)
    keys = cells(5)
    once = Evaluator("e0", dies_on={keys[0].cell_id}, restarts=True)
    original = sim.evaluate

    def evaluate(evaluator, state):
        handle = original(evaluator, state)
        evaluator.dies_on.discard(state.key.cell_id)  # it dies the first time only
        return handle

    sim.evaluate = evaluate
    recorded, deferred = run(sim, keys, [once], max_queued_builds=4)
    assert deferred == [] and len(recorded) == 5
    evals = [cell for stage, cell in sim.events if stage == "eval"]
    assert evals == [keys[0].cell_id] + [k.cell_id for k in keys]


def test_an_episode_turn_per_tool_call_ends_on_a_step_with_nothing_to_evaluate():
    """Tools mode's shape: every turn is a tool call (its outcome, not an EvalResult, comes
    back from the evaluator), and the source ends the cell with a turn that has neither a
    candidate nor a failure: recorded at once, nothing built or evaluated for it."""

    @dataclass
    class Outcome:  # what NodeEvaluator.run_tool returns: the tool's result around the engine's
        evaluation: EvalResult | None

    class Episode(Sim):
        def generate(self, state):
            k = state.key
            ended = len(state.turns) == 3
            gen = Generation(model=k.model, problem=k.problem, attempt=k.attempt,
                             candidate_source=None if ended else "def solution(x):\n    return x\n")
            return self._submit("gen", k.cell_id, gen)

        def evaluate(self, evaluator, state):
            self.built_not_evaluating -= 1
            ev = None if len(state.turns) == 2 else EvalResult(correct=True)  # turn 2: a profile
            return self._submit("eval", state.key.cell_id, Outcome(ev))

        def continue_cell(self, state):
            return True  # each outcome goes back to the episode, which says when it ends

    sim = Episode()
    recorded, deferred = run(sim, cells(2), [Evaluator("e0")])
    assert deferred == [] and len(recorded) == 2
    for state in recorded:
        assert len(state.turns) == 4 and state.current.generation.candidate_source is None
        assert [t.tool is not None for t in state.turns] == [True, True, True, False]
        assert [t.evaluation is not None for t in state.turns] == [True, False, True, False]
    assert sum(1 for stage, _ in sim.events if stage == "eval") == 6


class NodeState:
    def __init__(self) -> None:
        self.dead = False


class Slot:
    """One GPU group's slot of a node (driver/slots.py): slots of a node die together."""

    def __init__(self, name: str, node: NodeState, dies_on=()) -> None:
        self.name, self.node, self.dies_on, self.restarts = name, node, set(dies_on), False

    @property
    def dead(self) -> bool:
        return self.node.dead

    @dead.setter
    def dead(self, value: bool) -> None:
        self.node.dead = value


def test_a_lost_node_takes_its_idle_slots_out_of_the_pool():
    """Node A has two slots, B one. A dies under p0 while its other slot sits idle: p0 must
    not be handed to that dead slot (each such hand-off would charge it one more loss, and
    three make an honest cell a runtime_error); it waits for B."""
    sim = Sim(eval_s=5.0)
    keys = cells(2)
    a, b = NodeState(), NodeState()
    a0, a1, b0 = Slot("a0", a, dies_on={keys[0].cell_id}), Slot("a1", a), Slot("b0", b)
    recorded, deferred = run(sim, keys, [a0, b0, a1], same_node=lambda x, y: x.node is y.node)
    assert deferred == []
    lost = next(s for s in recorded if s.key == keys[0])
    assert lost.evaluator_losses == 1 and lost.current.evaluation.correct
    assert sorted(sim.evaluated_on) == [(keys[0].cell_id, "b0"), (keys[1].cell_id, "b0")]
