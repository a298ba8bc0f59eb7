"""The tool agent's settings: per-cell limits and how each tool is run."""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

# The dataclasses live with every other config group's (a sweep's `mode.tools`); this
# module is the agent's view of them.
from pkb_ray.config.schema import AgentConfig, AgentConfigError, AgentLimits

__all__ = ["AgentConfig", "AgentConfigError", "AgentLimits", "agent_config"]


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
