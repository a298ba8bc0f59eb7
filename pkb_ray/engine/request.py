"""What the evaluate stage is asked to do: one candidate, one problem, one world size."""

from __future__ import annotations

from dataclasses import dataclass, field

from pkb_ray.config.schema import SandboxConfig, TimeoutConfig, TimingConfig


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
    trials: int = 5
    guard: bool = True
    """NCCL-free guard on while the candidate runs (off only for model=reference)."""
    time_candidate: bool = True
    timing: TimingConfig = field(default_factory=TimingConfig)
    timeouts: TimeoutConfig = field(default_factory=TimeoutConfig)
    cache_dir: str = "~/.cache/pkb_ray"
    torch_cuda_arch_list: str = "9.0"
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    transport: str = "auto"
    """auto | cuda | host: how inputs and outputs cross the judge/worker boundary."""
    cell_id: str = ""
    """For logs only."""
