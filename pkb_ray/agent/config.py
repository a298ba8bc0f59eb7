"""The tool agent's settings: per-cell limits and how each tool is run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf


class AgentConfigError(ValueError):
    """An agent setting that cannot be used; the message names the key."""


@dataclass
class AgentLimits:
    """Per cell (one episode). The first limit reached ends the episode with its name."""

    tool_calls: int = 30
    """Tool calls of any kind (submit included)."""
    model_calls: int = 40
    """Model requests (a reply without a tool call is nudged once more and counts here)."""
    wall_s: float = 3600.0
    """Model latency plus tool wall time, summed over steps (time between a kill and the
    re-run does not count: the journal keeps each step's own duration)."""
    gpu_s: float = 1800.0
    """Device-seconds of tools: world_size x wall of each tool call (rank-seconds on CPU)."""
    usd: float = 5.0
    """Model spend, plus gpu_s priced at `gpu_usd_per_hour`."""
    gpu_usd_per_hour: float = 0.0
    """What one GPU-hour costs, for the dollar limit (0 = tools are free)."""


@dataclass
class AgentConfig:
    """`pkb agent run ... agent.KEY=VALUE`."""

    limits: AgentLimits = field(default_factory=AgentLimits)
    check_size: str = "small"
    """The problem size `check` runs at."""
    check_trials: int = 2
    """Correctness trials of one `check` (the submission runs the sweep's eval.trials)."""
    benchmark_size: str = "bench"
    """The problem size `benchmark` and `profile` run at."""
    profile_calls: int = 5
    """Profiled calls per rank (after two warm-up calls)."""
    run_timeout_s: float = 60.0
    """Wall-clock limit of one `run(script)` or `profile` on all ranks."""
    output_chars: int = 3000
    """Per rank, the tail of a script's output returned to the model."""
    tool_models: list[str] = field(default_factory=list)
    """Model names declared tool-capable where litellm cannot know (an openai_compatible
    endpoint serving a model with tool calling on, e.g. vLLM --enable-auto-tool-choice)."""

    def __post_init__(self) -> None:
        if self.check_size not in ("small", "bench"):
            raise AgentConfigError(f"agent.check_size must be small or bench, got {self.check_size!r}")
        if self.benchmark_size not in ("small", "bench"):
            raise AgentConfigError(f"agent.benchmark_size must be small or bench, got {self.benchmark_size!r}")
        for name in ("check_trials", "profile_calls"):
            if getattr(self, name) < 1:
                raise AgentConfigError(f"agent.{name} must be >= 1, got {getattr(self, name)}")
        if self.run_timeout_s <= 0:
            raise AgentConfigError(f"agent.run_timeout_s must be > 0, got {self.run_timeout_s}")
        lim = self.limits
        for name in ("tool_calls", "model_calls", "wall_s", "gpu_s", "usd"):
            if getattr(lim, name) <= 0:
                raise AgentConfigError(f"agent.limits.{name} must be > 0, got {getattr(lim, name)}")


def agent_config(overrides: list[str] | None = None, base: dict[str, Any] | None = None) -> AgentConfig:
    """AgentConfig from dotlist overrides without the `agent.` prefix (`limits.tool_calls=5`);
    an unknown key or a wrong type fails naming the key."""
    from omegaconf.errors import ConfigKeyError, ValidationError

    try:
        merged = OmegaConf.merge(OmegaConf.structured(AgentConfig), base or {},
                                 OmegaConf.from_dotlist(list(overrides or [])))
        return OmegaConf.to_object(merged)  # type: ignore[return-value]
    except (ConfigKeyError, ValidationError) as e:
        key = getattr(e, "full_key", "") or ""
        first = str(getattr(e, "msg", e)).splitlines()[0]
        raise AgentConfigError(f"agent.{key}: {first}" if key else f"agent config: {first}") from None
