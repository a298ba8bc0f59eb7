"""The evaluation request is built from the sweep's `eval` config in one place."""

from __future__ import annotations

import dataclasses

from omegaconf import OmegaConf

from pkb_ray.config import compose_config
from pkb_ray.config.schema import EvalConfig
from pkb_ray.engine.request import PER_CELL, PER_NODE, RENAMED, EvalRequest

CELL = dict(problem_id="allreduce", problems_source="builtin", candidate_source="x = 1",
            device="cpu", size="small", cell_id="m/allreduce/1/zeroshot")


def test_every_eval_setting_reaches_the_request():
    # each setting changed from its default, so a dropped or mis-mapped one shows
    ev = OmegaConf.to_object(compose_config([
        "eval.world_size=4", "eval.trials=3", "eval.guard=false", "eval.time_candidates=false",
        "eval.timing.min_calls=7", "eval.timeouts.load_s=9", "eval.cache_dir=/tmp/c",
        "eval.torch_cuda_arch_list=10.0", "eval.sandbox.mode=none", "eval.transport=host",
    ])).eval
    req = EvalRequest.from_config(ev, **CELL)
    for f in dataclasses.fields(EvalConfig):
        if f.name in PER_CELL or f.name in PER_NODE:
            continue
        assert getattr(req, RENAMED.get(f.name, f.name)) == getattr(ev, f.name), f.name
    assert (req.world_size, req.trials, req.time_candidate) == (4, 3, False)
    assert req.sandbox.mode == "none" and req.transport == "host" and req.timing.min_calls == 7
    assert (req.device, req.size, req.cell_id) == ("cpu", "small", CELL["cell_id"])


def test_request_defaults_are_the_configs():
    bare = EvalRequest(problem_id="p", problems_source="builtin", candidate_source="",
                       world_size=2, device="cpu", size="small")
    assert bare == EvalRequest.from_config(EvalConfig(), problem_id="p", problems_source="builtin",
                                           candidate_source="", device="cpu", size="small")


def test_a_source_can_turn_the_guard_off_but_never_on():
    assert not EvalRequest.from_config(EvalConfig(), guard=False, **CELL).guard
    assert EvalRequest.from_config(EvalConfig(), **CELL).guard
    assert not EvalRequest.from_config(EvalConfig(guard=False), guard=True, **CELL).guard
