"""One tool-agent episode (a cell): ask the model, run the tools it calls, until it submits
or a limit ends it.

Resumption is replay with memoization: the loop runs from step 1 every time; a step the
model already answered comes from kernels_cache, a tool call already finished comes from
the journal (the same bytes the model saw), so the rebuilt conversation is identical and
the first new request is the first one never answered. An episode with an `end` record
returns it without any call.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from pkb_ray.agent.capability import require_tool_support
from pkb_ray.agent.config import AgentConfig, AgentLimits
from pkb_ray.agent.executor import ToolExecutor
from pkb_ray.agent.journal import End, EpisodeJournal, Header, JournalError, ModelStep, ToolDone, ToolStart
from pkb_ray.agent.model import TOOL_PROTOCOL, ModelReply, ToolModel, ToolModelClient
from pkb_ray.agent.tools import BadToolCall, ToolOutcome, ToolRequest, parse_call, tool_schemas
from pkb_ray.config.schema import ModelConfig
from pkb_ray.engine.request import EvalRequest
from pkb_ray.engine.version import HARNESS_VERSION
from pkb_ray.records import EvalResult, FailureClass, from_plain


class EndReason(str, enum.Enum):
    SUBMITTED = "submitted"
    LIMIT_TOOL_CALLS = "limit_tool_calls"
    LIMIT_MODEL_CALLS = "limit_model_calls"
    LIMIT_WALL = "limit_wall_s"
    LIMIT_GPU = "limit_gpu_s"
    LIMIT_USD = "limit_usd"
    MODEL_ERROR = "model_error"
    """The model call failed (rate limit, server error, bad key): nothing is recorded as the
    end, so a re-run retries from this step."""


RunTool = Callable[[ToolRequest], Awaitable[ToolOutcome]]
"""Runs one tool call: in this process (`pkb agent run`), or queued as an evaluation task
on the cluster's nodes (a sweep's tools mode, agent/service.py)."""
OnModel = Callable[[ModelReply], None]
"""Told of every model reply (cached or not) as the loop records it."""


@dataclass
class Usage:
    tool_calls: int = 0
    model_calls: int = 0
    wall_s: float = 0.0
    gpu_s: float = 0.0
    model_usd: float = 0.0

    def usd(self, limits: AgentLimits) -> float:
        return self.model_usd + self.gpu_s / 3600.0 * limits.gpu_usd_per_hour

    def reached(self, limits: AgentLimits, next_call: str) -> tuple[EndReason, str] | None:
        """The first limit this episode has reached before its next `model` or `tool` call."""
        checks = [
            (EndReason.LIMIT_WALL, self.wall_s, limits.wall_s, "s of model and tool time"),
            (EndReason.LIMIT_GPU, self.gpu_s, limits.gpu_s, "device-seconds of tools"),
            (EndReason.LIMIT_USD, self.usd(limits), limits.usd, "USD"),
            (EndReason.LIMIT_MODEL_CALLS if next_call == "model" else EndReason.LIMIT_TOOL_CALLS,
             self.model_calls if next_call == "model" else self.tool_calls,
             limits.model_calls if next_call == "model" else limits.tool_calls,
             "model calls" if next_call == "model" else "tool calls"),
        ]
        for reason, used, limit, unit in checks:
            if used >= limit:
                return reason, f"{reason.value}: {used:.4g} of {limit:.4g} {unit} used before the next {next_call} call"
        return None


@dataclass
class EpisodeSpec:
    """One cell of the tool agent."""

    model: ModelConfig
    attempt: int
    base: EvalRequest
    """How the submission is evaluated (the zero-shot request); tools derive from it."""
    journal_path: str
    kernels_cache: str
    prompt_context: Any = None
    """generation.prompt.EvalContext the prompt describes (default: from `base`)."""


@dataclass
class EpisodeResult:
    reason: EndReason
    detail: str
    final: EvalResult | None
    usage: Usage
    steps: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    requests_made: int = 0
    """Model requests this run sent (0 when every step came from kernels_cache)."""
    tools_run: int = 0
    """Tool calls this run executed (0 when every one came from the journal)."""
    model_failure: FailureClass | None = None
    """MODEL_ERROR only: the model call's failure class (transient ones are retried by a re-run)."""


TOOLS_SECTION = """\
## Tools (this session)

You have tools that run on this evaluation's ranks, in the same sandbox as any candidate:
`check(source)` (compile and correctness at the small size), `benchmark(source)` (the full
evaluation at the bench size: time, speedup and its interval, roofline fraction),
`profile(source)` (per-rank op times), `run(script)` (your own Python script on every rank,
with a time limit) and `submit(source)`. Use them to test and improve your module. The
output format above is replaced: your answer is the module you pass to `submit`, which
ends the session and is evaluated like any candidate. Tool calls, time and spend are
limited; a reply without a tool call is not an answer."""

NUDGE = "Call a tool: check, benchmark, profile or run to test a module, or submit(source) to finish."


def initial_messages(problem: Any, context: Any) -> list[dict[str, Any]]:
    from pkb_ray.generation.prompt import build_prompt

    p = build_prompt(problem, None, context)
    msgs = [dict(m) for m in p.messages]
    msgs[-1]["content"] = msgs[-1]["content"] + "\n\n" + TOOLS_SECTION
    return msgs


def identity_of(spec: EpisodeSpec, problem_version: str, prompt: list[dict[str, Any]]) -> dict[str, str]:
    from pkb_ray.generation.prompt import messages_hash

    b = spec.base
    return {k: str(v) for k, v in {
        "model": spec.model.name, "model_id": spec.model.model_id, "api_base": spec.model.api_base,
        "problem": b.problem_id, "problem_version": problem_version, "attempt": spec.attempt,
        "world_size": b.eval.world_size, "device": b.device, "size": b.size, "trials": b.eval.trials,
        "problems_source": b.problems_source, "harness_version": HARNESS_VERSION,
        "tool_protocol": TOOL_PROTOCOL, "prompt_hash": messages_hash(prompt)}.items()}


async def run_episode(spec: EpisodeSpec, cfg: AgentConfig, executor: ToolExecutor | None = None,
                      client_options: dict[str, Any] | None = None, run_tool: RunTool | None = None,
                      allow_api_calls: Callable[[], bool] = lambda: True,
                      on_model: OnModel = lambda reply: None,
                      client: ToolModelClient | None = None,
                      on_prompt: Callable[[list[dict[str, Any]]], None] = lambda messages: None) -> EpisodeResult:
    """`run_tool`: how a tool call runs (default: `executor`, or a ToolExecutor of
    `spec.base`, in this process). `allow_api_calls()`: asked before each uncached model
    call (a sweep's budget)."""
    require_tool_support(spec.model, cfg.tool_models)
    from pkb_ray.generation.prompt import EvalContext
    from pkb_ray.problems import load_problem

    b = spec.base
    problem = load_problem(b.problems_source, b.problem_id)
    context = spec.prompt_context or EvalContext(world_size=b.eval.world_size, device=b.device, size=b.size,
                                                 load_timeout_s=b.eval.timeouts.load_s)
    messages = initial_messages(problem, context)
    on_prompt(messages)
    journal = EpisodeJournal(spec.journal_path)
    identity = identity_of(spec, problem.spec.version, messages)
    header = journal.header()
    if header is None:
        journal.append(Header(identity))
    elif header.identity != identity:
        diff = sorted(k for k in identity.keys() | header.identity.keys()
                      if identity.get(k) != header.identity.get(k))
        raise JournalError(f"{spec.journal_path}: recorded for other settings ({', '.join(diff)}); "
                           "move it away to start this episode afresh")
    end = journal.end()
    if end is not None:
        final = from_plain(EvalResult, end.final) if end.final else None
        return EpisodeResult(EndReason(end.reason), end.detail, final, Usage(**end.usage),
                             sum(1 for r in journal.records if isinstance(r, ModelStep)))
    if run_tool is None:
        local = executor or ToolExecutor(b, cfg)

        async def run_tool(req: ToolRequest) -> ToolOutcome:
            return local.execute(req)  # blocks this loop: one episode per process here

    model = ToolModel(spec.model, tool_schemas(), spec.kernels_cache, b.problem_id, problem.spec.version,
                      spec.attempt, client_options, client)
    return await _Loop(spec, cfg, run_tool, journal, messages, model, allow_api_calls, on_model).run()


class _Loop:
    def __init__(self, spec: EpisodeSpec, cfg: AgentConfig, run_tool: RunTool, journal: EpisodeJournal,
                 messages: list[dict[str, Any]], model: ToolModel, allow_api_calls: Callable[[], bool],
                 on_model: OnModel) -> None:
        self.spec, self.cfg, self.run_tool, self.journal = spec, cfg, run_tool, journal
        self.messages, self.model = messages, model
        self.allow_api_calls, self.on_model = allow_api_calls, on_model
        self.usage = Usage()
        self.step = 0
        self.requests_made = 0
        self.tools_run = 0

    async def run(self) -> EpisodeResult:
        limits = self.cfg.limits
        while True:
            hit = self.usage.reached(limits, "model")
            if hit:
                return self.finish(*hit)
            self.step += 1
            reply = await self.model.reply(self.step, self.messages, self.allow_api_calls())
            if reply.failure is not None:
                out = self.result(EndReason.MODEL_ERROR, f"{reply.failure.value}: {reply.message}", None)
                out.model_failure = reply.failure
                return out
            self.requests_made += not reply.cached
            self.record_model(reply)
            self.messages.append(reply.assistant_message())
            if not reply.tool_calls:
                self.messages.append({"role": "user", "content": NUDGE})
                continue
            for call in reply.tool_calls:
                done = self.journal.tool_done(self.step, call.id)
                if done is None:
                    hit = self.usage.reached(limits, "tool")
                    if hit:
                        return self.finish(*hit)
                    done = await self.execute(call.id, call.name, call.arguments)
                self.usage.tool_calls += 1
                self.usage.wall_s += done.wall_s
                self.usage.gpu_s += done.device_s
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": done.content})
                if done.final is not None:
                    ev = from_plain(EvalResult, done.final)
                    return self.finish(EndReason.SUBMITTED, f"submitted at step {self.step}: "
                                       + ("correct" if ev.correct else (ev.failure.value if ev.failure else "failed")),
                                       done.final)

    def record_model(self, reply: ModelReply) -> None:
        self.on_model(reply)
        self.usage.model_calls += 1
        self.usage.model_usd += reply.cost_usd
        self.usage.wall_s += reply.latency_s
        if self.journal.model_step(self.step) is None:
            self.journal.append(ModelStep(self.step, reply.cache_key, reply.cached, reply.text,
                                          [dataclasses.asdict(c) for c in reply.tool_calls], reply.cost_usd,
                                          reply.prompt_tokens, reply.completion_tokens, reply.latency_s))

    async def execute(self, call_id: str, name: str, arguments: str) -> ToolDone:
        try:
            req = parse_call(name, arguments)
        except BadToolCall as e:
            outcome = ToolOutcome(None, error=str(e))
        else:
            self.journal.append(ToolStart(self.step, call_id, req.tool.value))
            outcome = await self.run_tool(req)
            self.tools_run += 1
        done = ToolDone(self.step, call_id, name, outcome.model_view(),
                        dataclasses.asdict(outcome.result) if outcome.result is not None else None,
                        outcome.wall_s, outcome.device_s, outcome.final)
        self.journal.append(done)
        return done

    def finish(self, reason: EndReason, detail: str, final: dict[str, Any] | None = None) -> EpisodeResult:
        self.journal.append(End(reason.value, detail, final, dataclasses.asdict(self.usage)))
        return self.result(reason, detail, from_plain(EvalResult, final) if final else None)

    def result(self, reason: EndReason, detail: str, final: EvalResult | None) -> EpisodeResult:
        return EpisodeResult(reason, detail, final, self.usage, self.step, self.messages,
                             self.requests_made, self.tools_run)
