"""The node's choice of spare sandboxes by their workers' CUDA pace (node/paces.py): the rule,
and the Hello it sends spares, with real workers and judges."""

from __future__ import annotations

import math

import pytest

from pkb_ray.engine.node import judge_node, paces
from pkb_ray.engine.node.evaluation import JudgeNodes, evaluate

from .conftest import CANDIDATES, LOADER, request_for

FAST, SLOW = 1.85, 1.99
"""us per kernel: the H200's two draws (s18 g13)."""


def test_a_pair_whose_paces_agree_is_taken_first_then_a_known_pair_then_an_unknown_one():
    # rank by rank: a pair that agrees on rank 0 and not on rank 1 is a mismatch
    assert paces.cost([FAST, SLOW], [FAST, FAST]) == pytest.approx(math.log(SLOW / FAST))
    assert paces.cost([FAST], None) is None and paces.cost([FAST], [FAST, FAST]) is None
    assert paces.cost([5e-324], [1e5]) > 700  # no quotient to underflow (a review found log(0))
    # the oldest candidate is slow, the oldest reference fast: the second candidate agrees
    assert paces.choose([[SLOW], [FAST]], [[FAST], [FAST]]) == (1, 0)
    # nothing agrees: the oldest known pair, never one still setting up (its set-up waited for)
    assert paces.choose([None, [SLOW]], [[FAST], None]) == (1, 0)
    assert paces.choose([[SLOW], [1.93]], [[FAST]]) == (0, 0)
    assert paces.choose([[FAST], [FAST]], [[FAST], [FAST]]) == (0, 0)
    # nothing known: the oldest, as before pairing
    assert paces.choose([None, None], [None]) == (0, 0)
    # one draw on the H200 spread by up to 3.1%, two draws were at least 3.8% apart (s18 g13)
    assert paces.choose([[1.944]], [[2.006]]) == (0, 0) and paces.cost([1.944], [2.006]) <= paces.TOLERANCE
    assert paces.cost([1.872], [1.944]) > paces.TOLERANCE


def test_a_pace_no_kernel_takes_is_no_pace():
    from pkb_ray.engine.protocol import messages as m

    assert m.bounded_pace(1.85) == 1.85
    assert [m.bounded_pace(x) for x in (None, 0.0, 5e-324, -1.0, float("nan"), float("inf"), 2e6)] == [None] * 7


@pytest.mark.slow
def test_spares_asked_their_pace_still_serve_their_judges(monkeypatch, cache_dir):
    """The node sends each spare a Hello while it waits ahead and reads the Ready; the judge
    then sends its own. On cpu the workers have no pace, but the exchange is the same: forced
    on here, with two spares of each kind ahead (cuda keeps paces.SPARES) and no wait for answers at the
    choice (so the answers are read at the hand-out: settle). Timed, untimed and unguarded
    evaluations in turn take asked spares, by the pairing and by the plain path, and are
    correct: no channel reaches a judge with an answer it did not ask for ("unexpected
    message 'ready'", which a review showed with settle made a no-op). Then every candidate
    spare's rank is killed: the next evaluation starts its own sandbox and says why."""
    import os
    import signal
    import time

    from pkb_ray.engine.judge.freezer import children

    from .test_adversarial_cpu import _descendant_running

    monkeypatch.setattr(paces, "MATCHED_ON", ("cuda", "cpu"))
    monkeypatch.setattr(paces, "ASK_WAIT_S", 0.0)
    monkeypatch.setattr(paces, "SPARES", 2)  # what is tested needs two; each more is a zygote on CI's two cores
    monkeypatch.setattr(judge_node.JudgeNode, "_overlaps", property(lambda self: True))
    settled: list[bool] = []
    settle = paces.PaceQuery.settle

    def counted(self, timeout_s):
        settled.append(self.asked and not all(self.answered))  # an answer left to read here
        return settle(self, timeout_s)

    monkeypatch.setattr(paces.PaceQuery, "settle", counted)
    nodes = JudgeNodes()
    taken = []

    def one(**kw):
        res = evaluate(request_for(CANDIDATES / "store_exchange.py", cache_dir, trials=1, **kw),
                       load_problem=LOADER, nodes=nodes)
        assert res.correct, (kw, res.failure, res.message, res.log[-2000:])
        assert res.evidence["paces_apart"] is None  # cpu: no pace to compare
        taken.append(res.evidence["sandbox_taken"])
        ev = res.timing
        if ev is not None and ev.samples:  # timed: every sample kept, cpu has no pace
            assert len(ev.windows_ms) == ev.samples and ev.context_pace_us == []

    try:
        for kw in (dict(), dict(time_candidates=False), dict(guard=False), dict()):
            one(**kw)
        (node,) = nodes.nodes()
        spares = node.sandboxes_ahead()
        assert spares and all(sb.pace is not None and not sb.pace.broken for sb in spares)
        assert any(settled), "no hand-out had an answer left to read: settle went untested"
        assert taken[0].startswith("started") and "ahead" in taken[1:], taken
        end = time.monotonic() + 60
        for spare in node.ahead[("candidate", True)]:
            assert spare.proc.wait_ready(60)
            zygote = _descendant_running(spare.proc.popen.pid, "pkb_ray.engine.worker.zygote")
            while len(children(zygote)) < 2 and time.monotonic() < end:
                time.sleep(0.05)
            os.kill(children(zygote)[0], signal.SIGKILL)
            while not any(w in spare.proc.log_tail("zygote.log") for w in ("exited", "killed")):
                assert time.monotonic() < end, spare.proc.log_tail("zygote.log")
                time.sleep(0.05)
        one()
        assert taken[-1] == "started: a rank of the one ahead had ended", taken
    finally:
        nodes.close()
