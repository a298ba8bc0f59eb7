"""The two agent modes, side by side.

mode=agent (feedback.py): after each evaluated turn the model is told how its candidate
fared and asked for a revision; the driver's pipeline evaluates every turn.

mode=tools, the tool-using agent: a model calls check, benchmark, profile, run
and submit, each run through the evaluation engine and its sandbox, until it submits or a
limit ends it.

    result = asyncio.run(run_episode(EpisodeSpec(...), AgentConfig()))

  tools.py      typed requests and results, the OpenAI function schemas
  executor.py   a tool call -> engine.evaluate (check, benchmark, submit) or ranks.py
  ranks.py      run/profile: the model's code on every rank in the engine's sandbox
  model.py      litellm function calling through kernels_cache
  journal.py    the episode's append-only record (resume, step-by-step transcript)
  episode.py    the loop and its limits
  capability.py refuse a model without tool calling at start-up
  redact.py     no harness path, variable or secret in what a model is shown (both modes)

May import records, config, problems, the engine and generation; modes/ and the driver
import it, and hand `execute_on_node` (executor.py) to the engine's node evaluators.
"""

from pkb_ray.agent.capability import ToolsUnsupported, require_tool_support
from pkb_ray.agent.config import AgentConfig, AgentConfigError, AgentLimits, agent_config
from pkb_ray.agent.episode import EndReason, EpisodeResult, EpisodeSpec, Usage, run_episode
from pkb_ray.agent.executor import ToolExecutor
from pkb_ray.agent.journal import EpisodeJournal, JournalError
from pkb_ray.agent.tools import Tool, ToolOutcome, ToolRequest, tool_schemas

__all__ = [
    "AgentConfig",
    "AgentConfigError",
    "AgentLimits",
    "EndReason",
    "EpisodeJournal",
    "EpisodeResult",
    "EpisodeSpec",
    "JournalError",
    "Tool",
    "ToolExecutor",
    "ToolOutcome",
    "ToolRequest",
    "ToolsUnsupported",
    "Usage",
    "agent_config",
    "require_tool_support",
    "run_episode",
    "tool_schemas",
]
