"""The node's limit on one evaluation (node/eval_limit.py): when it passes,
the node stops the sandboxes, and the workers the judges then see end were stopped, not
failed. The limit is shortened here so that it passes where the judges' own limits do not
(on a loaded 2-core machine it passed in the reference's calibration after 258 s)."""

from __future__ import annotations

import dataclasses
import importlib

from pkb_ray.records import FailureClass as F

from .conftest import ADVERSARIAL, CANDIDATES, FAST_TIMEOUTS


def _judge_pids() -> set[int]:
    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    return {j.popen.pid for node in ev.LOCAL.nodes() for j in node.judges}


def test_a_limit_that_passes_in_set_up_is_the_hosts_not_a_failed_worker(run_eval, monkeypatch):
    """Before: "harness error: judge 0: worker set-up: the reference worker failed: the worker
    ended during calibrate", a worker failure the node had caused, and the judges restarted.
    The limit passing while every rank is in set-up (no candidate code has run) is the host
    too slow to evaluate: harness_error (a re-run retries it), saying so, judges kept."""
    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    first = run_eval(CANDIDATES / "store_exchange.py", trials=1)
    assert first.correct, (first.failure, first.message)
    judges = _judge_pids()
    monkeypatch.setattr(ev, "evaluation_limit_s", lambda req: 0.05)
    res = run_eval(CANDIDATES / "store_exchange.py", trials=1)
    assert res.failure == F.HARNESS_ERROR, (res.failure, res.message)
    assert "the host was too slow or too loaded" in res.message and "failed" not in res.message, res.message
    assert _judge_pids() == judges, "the judges did not break: they need no restart"
    monkeypatch.undo()
    after = run_eval(CANDIDATES / "store_exchange.py", trials=1)
    assert after.correct, (after.failure, after.message)


def test_a_limit_that_passes_in_a_trial_is_a_timeout_not_a_crash(run_eval, monkeypatch):
    """Rank 1 hangs in its first call, under a trial limit longer than the evaluation's. Before:
    runtime_error, "the worker ended during trial:0 (killed by signal 9)": the node's stop read
    as the candidate crashing. Now a timeout naming the limit and the phase."""
    ev = importlib.import_module("pkb_ray.engine.node.evaluation")
    monkeypatch.setattr(ev, "evaluation_limit_s", lambda req: 8.0)
    res = run_eval(ADVERSARIAL / "hang_one_rank.py", trials=1, time_candidates=False,
                   timeouts=dataclasses.replace(FAST_TIMEOUTS, trial_s=120.0))
    assert res.failure == F.TIMEOUT, (res.failure, res.message)
    assert "did not finish within its 8 s" in res.message and "trial:0" in res.message, res.message
