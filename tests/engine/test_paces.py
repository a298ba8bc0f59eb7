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


def test_a_pair_whose_paces_agree_is_taken_before_an_unknown_one_and_that_before_a_mismatch():
    # rank by rank: a pair that agrees on rank 0 and not on rank 1 is a mismatch
    assert paces.cost([FAST, SLOW], [FAST, FAST]) == pytest.approx(math.log(SLOW / FAST))
    assert paces.cost([FAST], None) is None and paces.cost([FAST], [FAST, FAST]) is None
    # the oldest candidate is slow, the oldest reference fast: the second of each agree
    assert paces.choose([[SLOW], [FAST]], [[FAST], [FAST]]) == (1, 0)
    # nothing agrees: a pair not known yet beats a known mismatch
    assert paces.choose([[SLOW], None], [[FAST]]) == (1, 0)
    # among mismatches the closest, among equals the oldest
    assert paces.choose([[SLOW], [1.93]], [[FAST]]) == (1, 0)
    assert paces.choose([[FAST], [FAST]], [[FAST], [FAST]]) == (0, 0)
    assert paces.choose([None, None], [None]) == (0, 0)
    # within the tolerance is one draw
    assert paces.choose([[FAST * 1.015]], [[FAST]]) == (0, 0)


@pytest.mark.slow
def test_spares_asked_their_pace_still_serve_their_judges(monkeypatch, cache_dir):
    """The node sends each spare a Hello while it waits ahead and reads the Ready; the judge
    then sends its own. On cpu the workers have no pace, but the exchange is the same: forced
    on here, with two spares of each kind ahead (as on cuda), three timed evaluations in a
    row are correct and timed, and no spare is left with an answer unread in its channel."""
    monkeypatch.setattr(paces, "MATCHED_ON", ("cuda", "cpu"))
    monkeypatch.setattr(judge_node.JudgeNode, "_overlaps", property(lambda self: True))
    nodes = JudgeNodes()
    taken = []
    try:
        for _ in range(3):
            res = evaluate(request_for(CANDIDATES / "store_exchange.py", cache_dir, trials=1),
                           load_problem=LOADER, nodes=nodes)
            assert res.correct and res.speedup is not None, (res.message, res.log[-2000:])
            assert res.evidence["paces_apart"] is None  # cpu: no pace to compare
            taken.append(res.evidence["sandbox_taken"])
        (node,) = nodes.nodes()
        spares = node.sandboxes_ahead()
        assert spares and all(sb.pace is not None and not sb.pace.broken for sb in spares)
        asked = [sb for sb in spares if sb.pace is not None and sb.pace.asked]
        assert asked, "the last evaluation asked the spares it chose from"
        for sb in asked:
            assert sb.pace is not None and sb.pace.settle(30.0) and sb.pace.known() is None
    finally:
        nodes.close()
    assert taken[0].startswith("started") and taken[1:] == ["ahead", "ahead"], taken
