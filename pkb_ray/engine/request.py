"""What the evaluate stage is asked to do: one candidate, one problem, under the sweep's
`eval` settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pkb_ray.config.schema import EvalConfig


@dataclass(frozen=True)
class EvalRequest:
    """Everything a node needs to evaluate one candidate: the cell's own fields and the
    sweep's `eval` settings, passed through whole (no field copied: a setting added to
    EvalConfig reaches the engine as it is). Plain data: it crosses Ray, and reaches every
    judge inside its JudgeJob.

        EvalRequest(problem_id="allreduce", problems_source="builtin", candidate_source=src,
                    device="cpu", size="small", eval=EvalConfig(world_size=2, trials=3))
    """

    problem_id: str
    problems_source: str
    """Where rank processes load the problem from (see ProblemsConfig.source)."""
    candidate_source: str
    device: str
    """cpu | cuda: the cell's, resolved (`eval.device` is the sweep's rule, e.g. auto)."""
    size: str
    """small | bench: the cell's, resolved (`eval.size` likewise)."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """The sweep's evaluation settings: world size, trials, guard, timing, timeouts, caches,
    arch list, sandbox, transport. (`exclusive` configures the node actors, which the driver
    starts with it: each result records it as `sharing`.)"""
    source_guard: bool = True
    """False where the candidate source says its candidates run unguarded (the reference's
    use collectives by definition): it can turn the guard off, never on."""
    cell_id: str = ""
    """For logs only."""

    @property
    def guard(self) -> bool:
        """The NCCL-free guard is on while the candidate runs."""
        return self.eval.guard and self.source_guard

    def with_eval(self, **changes: Any) -> EvalRequest:
        """This request with some `eval` settings changed (the agent's check and benchmark
        tools: fewer trials, timing on or off)."""
        return dataclasses.replace(self, eval=dataclasses.replace(self.eval, **changes))

    @classmethod
    def from_config(cls, ev: EvalConfig, *, problem_id: str, problems_source: str,
                    candidate_source: str, device: str, size: str, guard: bool = True,
                    cell_id: str = "") -> EvalRequest:
        """The request for one candidate under the sweep's `eval` settings, with the cell's
        device and size resolved. `guard=False` turns the guard off whatever `eval.guard` says."""
        return cls(problem_id=problem_id, problems_source=problems_source, candidate_source=candidate_source,
                   device=device, size=size, eval=ev, source_guard=guard, cell_id=cell_id)
