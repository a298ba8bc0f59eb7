"""The tool agent in a sweep (`mode=tools`): every episode of one model runs in one async
actor on the driver's node (its API key and kernels_cache stay there, with the episodes'
journals), and each tool call leaves the actor as a `ToolStep` that the sweep's pipeline
queues on the cluster's evaluators like any other evaluation.

    step = await service.advance(key, base, journal_path, outcome_of_last_step, allow_api_calls)

The episode is agent/episode.py's loop, unchanged: its `run_tool` here hands the request
out (the pending `advance` returns it) and waits for the next `advance` to bring the
outcome back. So a cell waiting for its model holds no evaluator, and a cell whose tool
is queued holds no model slot; resumption is the episode's own (journal and
kernels_cache), whichever process asks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from pkb_ray.agent.config import AgentConfig
from pkb_ray.agent.episode import EndReason, EpisodeResult, EpisodeSpec, run_episode
from pkb_ray.agent.model import ModelReply, ToolModelClient
from pkb_ray.agent.tools import ToolOutcome, ToolRequest, tool_schemas
from pkb_ray.config.schema import ModelConfig
from pkb_ray.engine.request import EvalRequest
from pkb_ray.agent.journal import EpisodeJournal, ModelStep, ToolDone
from pkb_ray.records import CellKey, EvalResult, FailureClass, Generation, TurnSummary


@dataclass
class ToolStep(Generation):
    """What one `advance` produced: the model's replies since the last step (their text,
    tokens, spend) and either the tool call to run next (`tool`, `request`; the argument is
    also `candidate_source`) or the episode's end.

    The end: `failure` None and no candidate after a submission (`final` is its result when
    the episode had ended before this process asked, e.g. a driver killed before recording
    it); `no_code` when a limit ended it without a submission; the model call's class when
    a model call failed (transient ones are deferred and retried by a re-run)."""

    request: ToolRequest | None = None
    final: EvalResult | None = None
    end_reason: str = ""
    usage: dict[str, float] = field(default_factory=dict)
    transcript: list[TurnSummary] = field(default_factory=list)
    """The end only: every tool call of the episode, from its journal (calls finished by an
    earlier, interrupted run included)."""
    episode_spend: dict[str, Any] = field(default_factory=dict)
    """The end only: the whole episode's model spend, from its journal (episode_spend()):
    this run's steps may hold none of it (an episode that ended before a killed driver
    recorded it)."""

    def as_generation(self) -> Generation:
        """The plain record (the extra fields are the pipeline's business, not the journal's)."""
        return Generation(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Generation)})


@dataclass
class _Since:
    """Model replies since the episode's last step."""

    texts: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = True

    def add(self, reply: ModelReply) -> None:
        if reply.text:
            self.texts.append(reply.text)
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.cost_usd += reply.cost_usd
        self.latency_s += reply.latency_s
        self.cached = self.cached and reply.cached


class _Episode:
    def __init__(self) -> None:
        self.steps: asyncio.Queue[ToolStep] = asyncio.Queue()
        self.waiting: asyncio.Future[ToolOutcome] | None = None
        self.since = _Since()
        self.allow_api_calls = True
        self.n = 0
        self.prompt = ""
        self.task: asyncio.Task | None = None

    def set_prompt(self, messages: list[dict[str, Any]]) -> None:
        self.prompt = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


class AgentService:
    """Episodes of one model. Run as a Ray async actor (many episodes at once in its loop);
    the constructor takes plain values and does no I/O."""

    def __init__(self, model_cfg: ModelConfig, agent_cfg: AgentConfig, kernels_cache: str,
                 context: Any = None, client_options: Mapping[str, Any] | None = None) -> None:
        from pkb_ray.generation.models import as_model_config

        self.model = as_model_config(model_cfg)
        self.cfg = agent_cfg
        self.kernels_cache = kernels_cache
        self.context = context
        self.client_options = dict(client_options or {})
        self._client: ToolModelClient | None = None
        self.episodes: dict[str, _Episode] = {}

    async def advance(self, key: CellKey, base: EvalRequest, journal_path: str,
                      outcome: ToolOutcome | None, allow_api_calls: bool = True) -> ToolStep:
        """Start (or resume) the cell's episode, or hand it the outcome of its last step;
        returns its next step."""
        ep = self.episodes.get(journal_path)
        if ep is None:
            ep = self.episodes[journal_path] = _Episode()
            ep.allow_api_calls = allow_api_calls
            ep.task = asyncio.ensure_future(self._run(ep, key, base, journal_path))
        else:
            if ep.waiting is None or outcome is None:
                raise RuntimeError(f"{key.cell_id}: advance without a tool call waiting for its outcome")
            ep.allow_api_calls = allow_api_calls
            ep.waiting.set_result(outcome)
            ep.waiting = None
        step = await ep.steps.get()
        if step.request is None:
            self.episodes.pop(journal_path, None)
        return step

    def client(self) -> ToolModelClient:
        if self._client is None:
            self._client = ToolModelClient(self.model, tool_schemas(), **self.client_options)
        return self._client

    async def _run(self, ep: _Episode, key: CellKey, base: EvalRequest, journal_path: str) -> None:
        async def run_tool(req: ToolRequest) -> ToolOutcome:
            ep.waiting = asyncio.get_running_loop().create_future()
            ep.steps.put_nowait(self._step(ep, key, tool=req.tool.value, candidate_source=req.text, request=req))
            return await ep.waiting

        spec = EpisodeSpec(model=self.model, attempt=key.attempt, base=base, journal_path=journal_path,
                           kernels_cache=self.kernels_cache, prompt_context=self.context)
        try:
            result = await run_episode(spec, self.cfg, run_tool=run_tool,
                                       allow_api_calls=lambda: ep.allow_api_calls,
                                       on_model=lambda reply: ep.since.add(reply), client=self.client(),
                                       on_prompt=ep.set_prompt)
        except Exception as exc:  # a journal for other settings, a bug: said, never recorded
            ep.steps.put_nowait(self._step(ep, key, failure=FailureClass.HARNESS_ERROR,
                                           message=f"tool agent: {type(exc).__name__}: {exc}"))
            return
        journal = EpisodeJournal(journal_path)
        ep.steps.put_nowait(self._end(ep, key, result, transcript(journal), episode_spend(journal)))

    def _end(self, ep: _Episode, key: CellKey, result: EpisodeResult, calls: list[TurnSummary],
             spend: dict[str, Any]) -> ToolStep:
        usage = dataclasses.asdict(result.usage)
        common = dict(end_reason=result.reason.value, usage=usage, transcript=calls, episode_spend=spend)
        if result.reason is EndReason.SUBMITTED:
            return self._step(ep, key, message=result.detail, final=result.final, **common)
        if result.reason is EndReason.MODEL_ERROR:
            return self._step(ep, key, failure=result.model_failure or FailureClass.SERVER_ERROR,
                              message=result.detail, **common)
        return self._step(ep, key, failure=FailureClass.NO_CODE, message=f"no submission: {result.detail}", **common)

    def _step(self, ep: _Episode, key: CellKey, **fields: Any) -> ToolStep:
        since, ep.since = ep.since, _Since()
        ep.n += 1
        return ToolStep(model=self.model.name, problem=key.problem, attempt=key.attempt,
                        prompt=ep.prompt if ep.n == 1 else "",
                        response="\n\n".join(since.texts), prompt_tokens=since.prompt_tokens,
                        completion_tokens=since.completion_tokens, cost_usd=since.cost_usd,
                        latency_s=since.latency_s, cached=since.cached, turn=ep.n, **fields)


def episode_spend(journal: EpisodeJournal) -> dict[str, Any]:
    """Every model step the journal holds, summed: cost_usd, tokens, latency_s, and cached
    (every step came from kernels_cache)."""
    first: dict[int, ModelStep] = {}
    for r in journal.records:  # a step journaled again on a resume counts once, as first spent
        if isinstance(r, ModelStep):
            first.setdefault(r.step, r)
    steps = list(first.values())
    return {"cost_usd": sum(r.cost_usd for r in steps), "prompt_tokens": sum(r.prompt_tokens for r in steps),
            "completion_tokens": sum(r.completion_tokens for r in steps),
            "latency_s": sum(r.latency_s for r in steps), "cached": all(r.cached for r in steps)}


def transcript(journal: EpisodeJournal) -> list[TurnSummary]:
    """One row per finished tool call, in order: the model's text and spend of the step that
    made it (on the step's first call), the call's argument, and what the model was shown."""
    steps = {r.step: r for r in journal.records if isinstance(r, ModelStep)}
    rows: list[TurnSummary] = []
    charged: set[int] = set()
    for done in (r for r in journal.records if isinstance(r, ToolDone)):
        step = steps.get(done.step)
        args = next((c.get("arguments", "") for c in (step.tool_calls if step else []) if c.get("id") == done.call_id), "")
        try:
            parsed = json.loads(args or "{}")
            tool_input = next((v for v in parsed.values() if isinstance(v, str)), "") if isinstance(parsed, dict) else ""
        except ValueError:
            tool_input = args
        res = done.result or {}
        failure = res.get("failure")
        first = done.step not in charged
        charged.add(done.step)
        rows.append(TurnSummary(
            turn=len(rows) + 1, failure=FailureClass(failure) if failure in FailureClass._value2member_map_ else None,
            correct=bool(res.get("correct")), speedup=res.get("speedup"),
            roofline_fraction=res.get("roofline_fraction"), cost_usd=step.cost_usd if step and first else 0.0,
            cached=bool(step.cached) if step else True, message=str(res.get("message", ""))[:500],
            prompt=done.content, response=(step.text if step and first else ""), tool=done.tool,
            tool_input=tool_input, device_s=done.device_s))
    return rows
