"""What the evaluate stage is asked to do: one candidate, one problem, one world size."""

from __future__ import annotations

from dataclasses import dataclass, field

from pkb_ray.config.schema import EvalConfig, SandboxConfig, TimeoutConfig, TimingConfig

_DEFAULTS = EvalConfig()
"""The evaluation settings' defaults live in EvalConfig only; a request made without a
config (pkb eval, the benchmarks, tests) gets the same ones."""

RENAMED = {"time_candidates": "time_candidate"}
"""EvalConfig field -> EvalRequest field, where the names differ. `eval.time_candidates`
is part of every recorded cell's identity (renaming it would refuse every sweep made
before); `time_candidate` is what the engine's callers send."""

PER_CELL = ("device", "size")
"""EvalConfig fields the driver resolves before they reach a request (`auto` -> cuda/cpu,
small/bench): from_config takes them as arguments."""

PER_NODE = ("exclusive",)
"""EvalConfig fields that configure the node actors, not a request: the driver starts them
with it (engine/node_evaluator.py), and each result records what it was (`sharing`)."""


@dataclass
class EvalRequest:
    """Everything a node needs to evaluate one candidate. Plain data: it crosses Ray."""

    problem_id: str
    problems_source: str
    """Where rank processes load the problem from (see ProblemsConfig.source)."""
    candidate_source: str
    world_size: int
    device: str
    """cpu | cuda."""
    size: str
    """small | bench."""
    trials: int = _DEFAULTS.trials
    guard: bool = _DEFAULTS.guard
    """NCCL-free guard on while the candidate runs (off where the candidate source says so:
    the reference's candidates use collectives by definition)."""
    time_candidate: bool = _DEFAULTS.time_candidates
    timing: TimingConfig = field(default_factory=TimingConfig)
    timeouts: TimeoutConfig = field(default_factory=TimeoutConfig)
    cache_dir: str = _DEFAULTS.cache_dir
    torch_cuda_arch_list: str = _DEFAULTS.torch_cuda_arch_list
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    transport: str = _DEFAULTS.transport
    """auto | cuda | host: how inputs and outputs cross the judge/worker boundary."""
    cell_id: str = ""
    """For logs only."""

    @classmethod
    def from_config(cls, ev: EvalConfig, *, problem_id: str, problems_source: str,
                    candidate_source: str, device: str, size: str, guard: bool = True,
                    cell_id: str = "") -> EvalRequest:
        """The request for one candidate under the sweep's `eval` settings: every EvalConfig
        field is carried (under its RENAMED name), field by field, except the PER_CELL ones,
        given here as resolved (tests/driver/test_eval_request.py checks that none is left
        behind). `guard=False` turns the guard off whatever `eval.guard` says."""
        return cls(problem_id=problem_id, problems_source=problems_source, candidate_source=candidate_source,
                   world_size=ev.world_size, device=device, size=size, trials=ev.trials, guard=ev.guard and guard,
                   time_candidate=ev.time_candidates, timing=ev.timing, timeouts=ev.timeouts,
                   cache_dir=ev.cache_dir, torch_cuda_arch_list=ev.torch_cuda_arch_list, sandbox=ev.sandbox,
                   transport=ev.transport, cell_id=cell_id)
