"""The generate stage for one model: cache first, then the API, then the cache again.

`GenerationService` is what the driver runs as a Ray async actor
(`ray.remote(GenerationService).remote(cfg, source, cache_dir, replay_only)`): its
constructor takes only plain, picklable values and does no I/O; problems, prompts and the
litellm client are created on first use inside the actor's event loop. Many `generate`
calls run concurrently on one instance; the client's limiter keeps the model's limits.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Mapping

from pkb_ray.config.schema import ModelConfig
from pkb_ray.records import FailureClass, Generation

from .kernels_cache import KernelsCache, cache_key, is_cacheable
from .client import CallResult, ModelClient
from .extract import extract_candidate
from .models import as_model_config, check_model_config, sampling_params
from .prompt import PROMPT_VERSION, EvalContext, Prompt, build_prompt, messages_hash
from .sources import CandidateSource, source_for

if TYPE_CHECKING:
    from pkb_ray.problems.spec import Problem


class GenerationService:
    """Generations of one model (or pseudo-model) for (problem, attempt, turn) cells."""

    def __init__(self, model_cfg: ModelConfig | Mapping[str, Any], problems_source: str = "builtin",
                 cache_dir: str = "kernels_cache", replay_only: bool = False, *,
                 problems: Mapping[str, Problem] | None = None,
                 client_options: Mapping[str, Any] | None = None,
                 context: EvalContext | None = None):
        """`problems`: preloaded problems by id (tests, benchmarks); otherwise they are
        loaded from `problems_source` on first use. `client_options`: ModelClient
        keyword arguments (backoff_base_s, backoff_max_s, max_retry_after_s). `context`:
        the evaluation the prompts are for (world size, device, size, load limit)."""
        self.cfg = as_model_config(model_cfg)
        self.problems_source = problems_source
        self.cache = KernelsCache(cache_dir)
        self.replay_only = bool(replay_only)
        self._problems: dict[str, Problem] = dict(problems or {})
        self._prompts: dict[tuple[str, str | None], Prompt] = {}
        self._client_options = dict(client_options or {})
        self.context = context or EvalContext()
        self._client: ModelClient | None = None
        self._inflight: dict[str, asyncio.Future[Generation]] = {}
        self.cache_hits = 0
        self.cost_usd = 0.0

    # -- pieces created on first use -----------------------------------------------------
    @property
    def client(self) -> ModelClient:
        if self._client is None:
            self._client = ModelClient(self.cfg, **self._client_options)
        return self._client

    def problem(self, problem_id: str) -> Problem:
        if problem_id not in self._problems:
            from pkb_ray.problems import load_problem  # lazily: the loader imports torch

            self._problems[problem_id] = load_problem(self.problems_source, problem_id)
        return self._problems[problem_id]

    def prompt(self, problem_id: str, hardware: str | None = None) -> Prompt:
        k = (problem_id, hardware)
        if k not in self._prompts:
            self._prompts[k] = build_prompt(self.problem(problem_id), hardware, self.context)
        return self._prompts[k]

    def stats(self) -> dict[str, Any]:
        """Counters for progress displays and benchmarks."""
        c = self._client
        return {"model": self.cfg.name, "requests": c.requests if c else 0,
                "retries": c.retries if c else 0, "cache_hits": self.cache_hits,
                "cost_usd": self.cost_usd}

    def sampling(self) -> dict[str, Any]:
        """The parameters that change an answer: part of the cache key."""
        return sampling_params(self.cfg)

    # -- the stage -------------------------------------------------------------------------
    async def generate(self, problem_id: str, attempt: int, turn: int = 1,
                       history: list[dict[str, Any]] | None = None,
                       hardware: str | None = None,
                       allow_api_calls: bool = True) -> Generation:
        """One generation. Never raises for API or cache misses: failures are data.

        `allow_api_calls=False` is how the driver enforces `budget_usd` across models:
        cached cells still replay, an uncached one returns `budget_exhausted` (transient:
        a later run with a larger budget asks it) without any HTTP request.

        `history`: agent mode's conversation after the first prompt (assistant answers and
        user feedback, `{"role", "content"}` dicts, oldest first); the cache key hashes the
        whole conversation, so turn N is requested at most once per conversation."""
        base = Generation(model=self.cfg.name, problem=problem_id, attempt=attempt, turn=turn)
        bad = check_model_config(self.cfg)
        if bad:
            base.failure, base.message = FailureClass.BAD_REQUEST, bad
            return base
        source = source_for(self.cfg)
        if not source.calls_api:
            return self._serve(base, source)
        try:
            prompt = self.prompt(problem_id, hardware)
            problem = self.problem(problem_id)
        except Exception as e:  # noqa: BLE001: a problem that does not load is data too
            base.failure = FailureClass.HARNESS_ERROR
            base.message = f"problem {problem_id!r} did not load: {type(e).__name__}: {e}"
            return base
        messages = list(prompt.messages) + [
            {"role": m["role"], "content": m["content"]} for m in (history or [])]
        phash = messages_hash(messages) if history else prompt.hash
        base.prompt = messages[-1]["content"] if history else prompt.text
        base.prompt_hash = phash
        key = cache_key(model=self.cfg.model_id, api_base=self.cfg.api_base,
                        problem_id=problem_id, problem_version=problem.spec.version,
                        attempt=attempt, turn=turn, prompt_hash=phash, sampling=self.sampling())
        # Two identical requests in flight (a driver retry, a duplicated cell) share one call.
        if key in self._inflight:
            return _copy(await asyncio.shield(self._inflight[key]))
        fut: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            gen = await self._generate_keyed(base, key, messages, problem.spec.version,
                                             allow_api_calls)
            fut.set_result(gen)
            return gen
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # mark retrieved: a lone caller's error is not "never retrieved"
            raise
        finally:
            del self._inflight[key]

    async def _generate_keyed(self, gen: Generation, key: str, messages: list[dict[str, Any]],
                              problem_version: str, allow_api_calls: bool) -> Generation:
        entry = self.cache.get(key)
        if entry is not None:
            self.cache_hits += 1
            return _from_entry(gen, entry)
        if self.replay_only:
            gen.failure = FailureClass.NO_CANDIDATE
            gen.message = (f"replay_only: no cached generation for model {self.cfg.name!r}, "
                           f"problem {gen.problem!r}, attempt {gen.attempt}, turn {gen.turn} "
                           f"(key {key[:12]}) in {self.cache.root}")
            return gen
        if not allow_api_calls:
            gen.failure = FailureClass.BUDGET_EXHAUSTED
            gen.message = "budget_usd reached: no new API calls (cached cells still replay)"
            return gen
        call = await self.client.complete(messages)
        self.cost_usd += call.cost_usd
        _fill(gen, call)
        if call.failure is None:
            gen.candidate_source = extract_candidate(call.text)
            if gen.candidate_source is None:
                gen.failure = FailureClass.NO_CODE
                gen.message = "no fenced python block defining solution( in the response"
        if is_cacheable(gen.failure):
            # In a worker thread: the write fsyncs (about 1 ms idle, 5 ms on a loaded 2-core
            # VM, measured) and must not stall the loop that feeds the other requests.
            await asyncio.to_thread(
                self.cache.put, key, _entry(gen, call, messages, key, self.cfg, problem_version),
                secret_env=self.cfg.api_key_env)
        return gen

    def _serve(self, gen: Generation, source: CandidateSource) -> Generation:
        """A source that calls no API hands over the candidate it has, if any."""
        try:
            problem = self.problem(gen.problem)
        except Exception as e:  # noqa: BLE001
            gen.failure = FailureClass.HARNESS_ERROR
            gen.message = f"problem {gen.problem!r} did not load: {type(e).__name__}: {e}"
            return gen
        gen.candidate_source = source.serve(problem)
        if gen.candidate_source is None:
            gen.failure = FailureClass.NO_CANDIDATE
            gen.message = f"{self.cfg.name}: problem {gen.problem!r} has no {source.what}"
        return gen


def _fill(gen: Generation, call: CallResult) -> None:
    gen.response = call.text
    gen.failure = call.failure
    gen.message = call.message
    gen.prompt_tokens = call.prompt_tokens
    gen.completion_tokens = call.completion_tokens
    gen.cost_usd = call.cost_usd
    gen.latency_s = call.latency_s


def _entry(gen: Generation, call: CallResult, messages: list[dict[str, Any]], key: str,
           cfg: ModelConfig, problem_version: str) -> dict[str, Any]:
    return {
        "key": key,
        "created_at": time.time(),
        "model": cfg.name,
        "model_id": cfg.model_id,
        "api_base": cfg.api_base,
        "problem": gen.problem,
        "problem_version": problem_version,
        "attempt": gen.attempt,
        "turn": gen.turn,
        "prompt_version": PROMPT_VERSION,
        "prompt_hash": gen.prompt_hash,
        "messages": messages,
        "response": call.text,
        "finish_reason": call.finish_reason,
        "response_id": call.response_id,
        "candidate_source": gen.candidate_source,
        "failure": gen.failure.value if gen.failure else None,
        "message": gen.message,
        "usage": {"prompt_tokens": call.prompt_tokens,
                  "completion_tokens": call.completion_tokens},
        "cost_usd": call.cost_usd,
        "cost_source": call.cost_source,
        "latency_s": call.latency_s,
        "requests": call.requests,
    }


def _from_entry(gen: Generation, entry: dict[str, Any]) -> Generation:
    usage = entry.get("usage") or {}
    gen.response = entry.get("response")
    gen.candidate_source = entry.get("candidate_source")
    gen.failure = FailureClass(entry["failure"]) if entry.get("failure") else None
    gen.message = entry.get("message", "")
    gen.prompt_tokens = int(usage.get("prompt_tokens", 0))
    gen.completion_tokens = int(usage.get("completion_tokens", 0))
    # The cost that was paid when the entry was made; a sweep's spend should count only
    # uncached calls (Generation.cached says which).
    gen.cost_usd = float(entry.get("cost_usd", 0.0))
    gen.latency_s = float(entry.get("latency_s", 0.0))
    gen.cached = True
    return gen


def _copy(gen: Generation) -> Generation:
    import dataclasses

    return dataclasses.replace(gen)
