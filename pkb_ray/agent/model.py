"""Model calls with tools, through kernels_cache: a step already answered is never requested again.

The key is generation/kernels_cache.py's `cache_key` with the step as the turn and, as the prompt
hash, the sha256 of everything sent: the whole conversation (tool calls and tool results
included), the tool schemas and the protocol version. A resumed episode rebuilds the same
conversation from the cache and the journal, so every answered step is a cache hit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from pkb_ray.config.schema import ModelConfig
from pkb_ray.generation.kernels_cache import KernelsCache, cache_key
from pkb_ray.generation.client import CallResult, ModelClient
from pkb_ray.generation.models import sampling_params
from pkb_ray.records import FailureClass

TOOL_PROTOCOL = "pkb-agent-tools-v1"
"""Changes whenever the tools' names, schemas, the prompt's tools section or the way results
are shown change (a sweep's cells record it: their identity)."""


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class ToolCallResult(CallResult):
    tool_calls: list[ToolCall] = field(default_factory=list)


class ToolModelClient(ModelClient):
    """ModelClient (its admission, retries, failure classes and prices) sending the full
    tool conversation and reading tool calls back."""

    def __init__(self, cfg: ModelConfig, tools: list[dict[str, Any]], **options: Any) -> None:
        super().__init__(cfg, **options)
        self.tools = tools

    def request_kwargs(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        kw = super().request_kwargs(messages)
        kw["messages"] = [dict(m) for m in messages]  # tool_calls and tool_call_id kept
        kw["tools"] = self.tools
        kw["tool_choice"] = "auto"
        # litellm 1.106.0 imports its MCP gateway whenever `tools` is passed, and that import
        # needs the `mcp` package (not installed here, nor in the GPU nodes' packed site).
        # These are plain function tools, never MCP: litellm's own switch skips the import.
        kw["_skip_mcp_handler"] = True
        return kw

    def _success(self, result: CallResult, resp: Any, est: int, t_start: float) -> CallResult:
        base = super()._success(result, resp, est, t_start)
        calls = []
        choices = getattr(resp, "choices", None) or []
        for tc in (getattr(choices[0].message, "tool_calls", None) or []) if choices else []:
            fn = tc.function
            calls.append(ToolCall(str(tc.id), str(fn.name), fn.arguments or "{}"))
        return ToolCallResult(**{f.name: getattr(base, f.name) for f in dataclasses.fields(CallResult)},
                              tool_calls=calls)


@dataclass
class ModelReply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    failure: FailureClass | None = None
    message: str = ""
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    cache_key: str = ""

    def assistant_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in self.tool_calls]
        return msg


def conversation_hash(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    canon = json.dumps({"protocol": TOOL_PROTOCOL, "messages": messages, "tools": tools},
                       sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


class ToolModel:
    """One episode's model: cache first, then the API, then the cache again."""

    def __init__(self, cfg: ModelConfig, tools: list[dict[str, Any]], cache_dir: str, problem_id: str,
                 problem_version: str, attempt: int, client_options: dict[str, Any] | None = None,
                 client: ToolModelClient | None = None) -> None:
        """`client`: one shared by every episode of this model (a sweep), so that its
        admission keeps the model's max_concurrency, rpm and tpm across them."""
        self.cfg, self.tools = cfg, tools
        self.cache = KernelsCache(cache_dir)
        self.problem_id, self.problem_version, self.attempt = problem_id, problem_version, attempt
        self.client = client or ToolModelClient(cfg, tools, **(client_options or {}))

    def key(self, step: int, messages: list[dict[str, Any]]) -> str:
        return cache_key(model=self.cfg.model_id, api_base=self.cfg.api_base, problem_id=self.problem_id,
                         problem_version=self.problem_version, attempt=self.attempt, turn=step,
                         prompt_hash=conversation_hash(messages, self.tools),
                         sampling={**sampling_params(self.cfg), "mode": TOOL_PROTOCOL})

    async def reply(self, step: int, messages: list[dict[str, Any]], allow_api_calls: bool = True) -> ModelReply:
        """`allow_api_calls=False` (a sweep past its budget_usd): a cached step replays, an
        uncached one comes back `budget_exhausted` without a request."""
        key = self.key(step, messages)
        entry = self.cache.get(key)
        if entry is not None:
            usage = entry.get("usage") or {}
            return ModelReply(entry.get("response") or "", [ToolCall(**c) for c in entry.get("tool_calls", [])],
                              cost_usd=float(entry.get("cost_usd", 0.0)),
                              prompt_tokens=int(usage.get("prompt_tokens", 0)),
                              completion_tokens=int(usage.get("completion_tokens", 0)),
                              latency_s=float(entry.get("latency_s", 0.0)), cached=True, cache_key=key)
        if not allow_api_calls:
            return ModelReply(failure=FailureClass.BUDGET_EXHAUSTED, cache_key=key,
                              message="budget_usd reached: no new API calls (cached steps still replay)")
        call = await self.client.complete(messages)
        tool_calls = list(getattr(call, "tool_calls", []))
        reply = ModelReply(call.text or "", tool_calls, call.failure, call.message, call.cost_usd,
                           call.prompt_tokens, call.completion_tokens, call.latency_s, False, key)
        if call.failure is None:
            self.cache.put(key, self._entry(key, step, messages, call, tool_calls), secret_env=self.cfg.api_key_env)
        return reply

    def _entry(self, key: str, step: int, messages: list[dict[str, Any]], call: CallResult,
               tool_calls: list[ToolCall]) -> dict[str, Any]:
        return {"key": key, "kind": "tool_turn", "protocol": TOOL_PROTOCOL, "created_at": time.time(),
                "model": self.cfg.name, "model_id": self.cfg.model_id, "api_base": self.cfg.api_base,
                "problem": self.problem_id, "problem_version": self.problem_version,
                "attempt": self.attempt, "turn": step, "messages": messages, "tools": self.tools,
                "response": call.text, "tool_calls": [dataclasses.asdict(c) for c in tool_calls],
                "finish_reason": call.finish_reason, "response_id": call.response_id, "failure": None,
                "usage": {"prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens},
                "cost_usd": call.cost_usd, "cost_source": call.cost_source, "latency_s": call.latency_s,
                "requests": call.requests}
