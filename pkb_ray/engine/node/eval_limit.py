"""How long the node waits on the judges of one evaluation, and whose time that is.

The limit is two shares: the harness's set-up (the workers started, the inputs prepared, the
floor calibrated; no candidate code runs yet) and the candidate's phases (loading, the trials,
the timing), each phase's own limit added up. The judges' limits end a hang first; this one
ends what they do not add up to, such as set-up crawling on a host loaded by other work.
Where it passes, the verdict charges the candidate only if set-up kept to its share
(verdict._ran_out)."""

from __future__ import annotations

from pkb_ray.engine.request import EvalRequest

SET_UP_SLACK_S = 60.0
"""Set-up's share over the workers' start limit: calibration runs timed calls of its own."""


def set_up_share_s(req: EvalRequest) -> float:
    return req.eval.timeouts.start_s + SET_UP_SLACK_S


def candidate_share_s(req: EvalRequest) -> float:
    t, ev = req.eval.timeouts, req.eval
    return t.load_s + t.trial_s * (ev.trials + 2) + (t.timing_s if ev.time_candidates else 0)


def evaluation_limit_s(req: EvalRequest) -> float:
    return set_up_share_s(req) + candidate_share_s(req)
