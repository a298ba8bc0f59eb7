"""JudgeNodes, the judges a node actor keeps per GPU group: a node for other settings on
overlapping GPUs replaces the old ones, and stopping those never holds up the other groups."""

from __future__ import annotations

import threading
import time

from pkb_ray.engine import launch
from pkb_ray.engine.node import judge_node
from pkb_ray.engine.node.evaluation import JudgeNodes
from pkb_ray.engine.node.judge_node import NodeSpec


def _spec(gpus, world_size=2):
    return NodeSpec(device="cpu", world_size=world_size, gpus=gpus, plan=launch.SandboxPlan("none"),
                    torch_cuda_arch_list="9.0", cache_dirs=())


def test_a_whole_node_replaces_its_groups_without_holding_up_the_others(monkeypatch):
    stopped: list = []

    def slow_stop(self):
        time.sleep(1.5)  # a judge may take seconds to quit
        stopped.append(self.spec.gpus)

    monkeypatch.setattr(judge_node.JudgeNode, "stop", slow_stop)
    nodes = JudgeNodes()
    pair_a, pair_b = nodes.node_for(_spec((0, 1))), nodes.node_for(_spec((2, 3)))
    other = nodes.node_for(_spec((4, 5)))
    whole = threading.Thread(target=nodes.node_for, args=(_spec((0, 1, 2, 3), 4),))
    whole.start()
    time.sleep(0.2)  # the 4-GPU node is stopping the two pairs it replaces
    t0 = time.monotonic()
    assert nodes.node_for(_spec((4, 5))) is other
    assert time.monotonic() - t0 < 0.5, "a group's evaluation waited for another group's judges to stop"
    whole.join(10)
    assert sorted(stopped) == [(0, 1), (2, 3)]
    assert {n.spec.gpus for n in nodes.nodes()} == {(0, 1, 2, 3), (4, 5)}
    assert pair_a not in nodes.nodes() and pair_b not in nodes.nodes()


def test_on_gpus_the_next_sandboxes_start_after_the_judges_have_their_job(monkeypatch, cache_dir):
    """Where spares overlap an evaluation (cuda: _overlaps), they start once every judge has
    its job, not before: their start (forks, mounts, groups) is off the evaluation's path.
    Run on cpu with the overlap forced, which only changes when the spares start."""
    from pkb_ray.engine.node.evaluation import evaluate

    from .conftest import CANDIDATES, LOADER, request_for

    calls: list[str] = []
    new_sandbox, hand_out = judge_node.JudgeNode._new_sandbox, judge_node.JudgeNode._hand_out

    def logged_new(self, role, guard):
        calls.append(f"start {role}")
        return new_sandbox(self, role, guard)

    def logged_hand_out(self, *a):
        calls.append("hand out")
        return hand_out(self, *a)

    monkeypatch.setattr(judge_node.JudgeNode, "_overlaps", property(lambda self: True))
    monkeypatch.setattr(judge_node.JudgeNode, "_new_sandbox", logged_new)
    monkeypatch.setattr(judge_node.JudgeNode, "_hand_out", logged_hand_out)
    nodes = JudgeNodes()
    ages = []
    try:
        for _ in range(2):
            res = evaluate(request_for(CANDIDATES / "store_exchange.py", cache_dir, time_candidates=False,
                                       trials=1), load_problem=LOADER, nodes=nodes)
            assert res.correct, (res.message, res.log[-2000:])
            ages.append(res.evidence["seconds"]["sandbox_age"])
    finally:
        nodes.close()
    # The first took a sandbox started on the spot, the second the one started at the first's hand-out.
    assert ages[0] < ages[1], ages
    # The first evaluation starts its own sandbox (nothing was ahead), then, after the
    # hand-out, the next one's and the one after it (a GPU node keeps two ahead); the second
    # takes the first of those and starts the third one ahead after its hand-out.
    assert calls == ["start candidate", "hand out", "start candidate", "start candidate",
                     "hand out", "start candidate"], calls


def test_a_switch_of_guard_setting_keeps_the_other_settings_sandbox_ahead(cache_dir):
    """A guarded model and the unguarded reference model alternate on one node: the sandbox
    started ahead for the first setting waits through the second's evaluation and is taken
    when the first comes back, instead of being thrown away at the switch (the evaluation
    then waited 1.3-2.0 s for a new one on 4 x H200)."""
    from pkb_ray.engine.node.evaluation import evaluate

    from .conftest import CANDIDATES, LOADER, request_for

    nodes = JudgeNodes()
    ages, pids, taken = [], [], []
    try:
        for guard in (True, False, True):
            res = evaluate(request_for(CANDIDATES / "store_exchange.py", cache_dir, time_candidates=False,
                                       trials=1, guard=guard), load_problem=LOADER, nodes=nodes)
            assert res.correct, (res.message, res.log[-2000:])
            ages.append(res.evidence["seconds"]["sandbox_age"])
            taken.append(res.evidence["sandbox_taken"])
            (node,) = nodes.nodes()
            pids.append({key: [sb.proc.popen.pid for sb in q] for key, q in node.ahead.items()})
    finally:
        nodes.close()
    guarded_ahead = pids[0][("candidate", True)]
    # Still ahead after the unguarded evaluation, which started one of its own setting.
    assert pids[1][("candidate", True)] == guarded_ahead and pids[1][("candidate", False)], pids
    # The third took it: started at the first's end, it had the whole second evaluation's
    # time; the second's was started on the spot.
    assert guarded_ahead[0] not in pids[2][("candidate", True)], pids
    assert ages[2] > ages[1] + 0.2, ages
    assert taken == ["started: none was ahead", "started: none was ahead", "ahead"], taken


def test_a_sandbox_started_ahead_outlives_the_thread_whose_evaluation_started_it(cache_dir):
    """bubblewrap's --die-with-parent follows the thread that forked it: a sandbox started
    ahead from an evaluation's thread died when that thread ended, and the next evaluation,
    on a thread of its own, started one on the spot. Each evaluation here runs on a thread
    that ends before the next one starts, as the groups benchmark's phases do."""
    from pkb_ray.engine.node.evaluation import evaluate

    from .conftest import CANDIDATES, LOADER, request_for

    nodes = JudgeNodes()
    taken: list[str] = []

    def one() -> None:
        res = evaluate(request_for(CANDIDATES / "store_exchange.py", cache_dir, time_candidates=False, trials=1),
                       load_problem=LOADER, nodes=nodes)
        assert res.correct, (res.message, res.log[-2000:])
        taken.append(res.evidence["sandbox_taken"])

    try:
        for _ in range(2):
            t = threading.Thread(target=one)
            t.start()
            t.join()
            time.sleep(2.0)  # the thread is gone; so would the sandbox it started be, by now
    finally:
        nodes.close()
    assert taken == ["started: none was ahead", "ahead"], taken


def test_prestarting_a_group_starts_the_judges_its_evaluations_use(monkeypatch, cache_dir):
    """A group's judges depend on the whole node (their cores: cpu_pins); prestarted for
    GPUs 2,3 of a 4-GPU node, they are the ones evaluate(lease=...) asks for, not others
    that it would replace."""
    from pkb_ray.engine.node import cpu_pins, evaluation

    from .conftest import CANDIDATES, request_for

    monkeypatch.setattr(cpu_pins.os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(judge_node.JudgeNode, "start", lambda self: None)
    monkeypatch.setattr(judge_node.JudgeNode, "prewarm", lambda self, guard=True, timed=True: None)
    req = request_for(CANDIDATES / "store_exchange.py", cache_dir, device="cuda")
    nodes = JudgeNodes()
    started = evaluation.prestart(req, gpus=(2, 3), nodes=nodes, node_gpus=(0, 1, 2, 3))
    assert started.spec == evaluation.node_spec(req, (2, 3), (0, 1, 2, 3))
    assert started.spec.cores and started.spec != evaluation.node_spec(req, (2, 3), (2, 3))
    assert not set(started.spec.setup_cores) & {c for rc in cpu_pins.plan([0, 1, 2, 3], 4, list(range(64)))
                                                for c in (rc.judge, rc.workers)}
