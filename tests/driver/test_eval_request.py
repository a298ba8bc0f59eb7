"""The evaluation request carries the sweep's `eval` settings whole, built in one place."""

from __future__ import annotations

from omegaconf import OmegaConf

from pkb_ray.config import compose_config
from pkb_ray.config.schema import EvalConfig
from pkb_ray.engine.request import EvalRequest

CELL = dict(problem_id="allreduce", problems_source="builtin", candidate_source="x = 1",
            device="cpu", size="small", cell_id="m/allreduce/1/zeroshot")


def test_every_eval_setting_reaches_the_request():
    """The settings are passed through, not copied field by field: none can be left behind."""
    ev = OmegaConf.to_object(compose_config([
        "eval.world_size=4", "eval.trials=3", "eval.guard=false", "eval.time_candidates=false",
        "eval.timing.min_calls=7", "eval.timeouts.load_s=9", "eval.cache_dir=/tmp/c",
        "eval.torch_cuda_arch_list=10.0", "eval.sandbox.mode=none", "eval.transport=host",
    ])).eval
    req = EvalRequest.from_config(ev, **CELL)
    assert req.eval is ev
    assert (req.eval.world_size, req.eval.trials, req.eval.time_candidates) == (4, 3, False)
    assert (req.device, req.size, req.cell_id) == ("cpu", "small", CELL["cell_id"])


def test_request_defaults_are_the_configs():
    bare = EvalRequest(problem_id="p", problems_source="builtin", candidate_source="", device="cpu", size="small")
    assert bare == EvalRequest.from_config(EvalConfig(), problem_id="p", problems_source="builtin",
                                           candidate_source="", device="cpu", size="small")


def test_a_source_can_turn_the_guard_off_but_never_on():
    assert not EvalRequest.from_config(EvalConfig(), guard=False, **CELL).guard
    assert EvalRequest.from_config(EvalConfig(), **CELL).guard
    assert not EvalRequest.from_config(EvalConfig(guard=False), guard=True, **CELL).guard


def test_a_tool_changes_settings_without_touching_the_sweeps():
    ev = EvalConfig(trials=5)
    req = EvalRequest.from_config(ev, **CELL)
    check = req.with_eval(trials=2, time_candidates=False)
    assert (check.eval.trials, check.eval.time_candidates, ev.trials, req.eval.trials) == (2, False, 5, 5)
