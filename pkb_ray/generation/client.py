"""One model's API client: litellm `acompletion` with our own admission, retries and costs.

litellm's own retries are off (num_retries=0, max_retries=0 for the OpenAI SDK under it)
so that every HTTP request is ours: counted, rate limited, and retried only on failures
that can pass (429, 5xx, timeouts, dropped connections), honouring Retry-After.
Failure classes come from litellm's exception types, never from message text.

API keys are read from the environment at call time, passed to litellm explicitly, and
never stored on the client, logged, cached or returned (error messages are scrubbed).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Any

from pkb_ray.config.schema import ModelConfig
from pkb_ray.records import FailureClass

from .ratelimit import RateLimiter

log = logging.getLogger(__name__)

# Sent to keyless OpenAI-compatible servers. Without an explicit key the OpenAI SDK falls
# back to OPENAI_API_KEY, which would hand a real key to whatever server api_base names.
NO_KEY_PLACEHOLDER = "sk-no-key-required"


def litellm_module():
    """litellm, imported on first use (about 3 s) and configured once.

    LITELLM_LOCAL_MODEL_COST_MAP: litellm otherwise fetches its price table from GitHub at
    import (three tries, seconds when offline, as on cluster nodes) and prices would then
    depend on the day of the run; the table pinned with litellm 1.106.0 is reproducible."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm
        # The OpenAI SDK imports its chat resources on the first request (0.5-1 s, measured);
        # importing them here keeps that stall out of the first wave of concurrent calls.
        import openai.resources.chat  # noqa: F401

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.drop_params = False  # an unsupported parameter is a config bug: fail loudly
        _litellm = litellm
    return _litellm


_litellm = None


@dataclass
class CallResult:
    """The outcome of one logical call (all its retries)."""

    text: str | None = None
    failure: FailureClass | None = None
    message: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_source: str = "none"
    """`litellm` (its price table), `config` (the model config's prices) or `none`."""
    latency_s: float = 0.0
    """Wall time of the whole call: admission waits, every request and every backoff."""
    requests: int = 0
    """HTTP requests made (1 + retries, or 0 when nothing was sent)."""
    finish_reason: str | None = None
    response_id: str | None = None


def litellm_model_name(cfg: ModelConfig) -> str:
    """The id litellm routes on, as the model's candidate source spells it (an
    OpenAI-compatible endpoint's bare model name, which may hold a slash, `Qwen/Qwen3-8B`,
    goes through litellm's OpenAI path)."""
    from .sources import source_for

    return source_for(cfg).litellm_model(cfg)


def classify_exception(e: BaseException) -> tuple[FailureClass, bool]:
    """(failure class, worth retrying) from the exception's type (and HTTP status)."""
    litellm = litellm_module()
    x = litellm.exceptions
    if isinstance(e, x.RateLimitError):
        return FailureClass.RATE_LIMITED, True
    if isinstance(e, (x.AuthenticationError, x.PermissionDeniedError)):
        return FailureClass.AUTH, False
    # litellm.Timeout subclasses openai.APITimeoutError < APIConnectionError: check it first.
    if isinstance(e, (x.Timeout, asyncio.TimeoutError, TimeoutError)):
        return FailureClass.GENERATION_TIMEOUT, True
    if isinstance(e, (x.BadRequestError, x.NotFoundError, x.UnprocessableEntityError)):
        return FailureClass.BAD_REQUEST, False
    if isinstance(e, (x.InternalServerError, x.ServiceUnavailableError, x.BadGatewayError,
                      x.APIConnectionError, x.APIResponseValidationError)):
        return FailureClass.SERVER_ERROR, True
    status = getattr(e, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return FailureClass.RATE_LIMITED, True
        if status in (401, 403):
            return FailureClass.AUTH, False
        if status in (408, 409) or status >= 500:
            return FailureClass.SERVER_ERROR, True
        if 400 <= status < 500:
            return FailureClass.BAD_REQUEST, False
    # Anything else (a generic litellm.APIError without a status, a response litellm could
    # not parse): treat as the server's fault and retry, within max_retries.
    return FailureClass.SERVER_ERROR, True


def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    if not headers:
        return None
    get = headers.get
    ms = get("retry-after-ms") or get("Retry-After-Ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = get("retry-after") or get("Retry-After")
    if not ra:
        return None
    ra = str(ra).strip()
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _retry_after_of(e: BaseException) -> float | None:
    for headers in (getattr(e, "litellm_response_headers", None),
                    getattr(getattr(e, "response", None), "headers", None),
                    getattr(e, "headers", None)):
        try:
            value = parse_retry_after(headers)
        except Exception:  # a header object we do not understand: no hint
            value = None
        if value is not None:
            return value
    return None


def list_price_usd(cfg: ModelConfig, prompt_tokens: int, completion_tokens: int) -> tuple[float | None, str]:
    """(USD, where the price came from) of one call of this size before it is made: litellm's
    pinned table, where it knows the model and no custom endpoint serves it, else the config's
    prices (the rule ModelClient._cost bills by); (None, "none") when neither has one."""
    if not cfg.api_base:
        try:
            prompt_usd, completion_usd = litellm_module().cost_per_token(
                model=cfg.model_id, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
            if prompt_usd + completion_usd > 0:
                return float(prompt_usd + completion_usd), "litellm"
        except Exception:  # noqa: BLE001: litellm does not know the model: the config's prices
            pass
    if cfg.price_input_per_mtok is None and cfg.price_output_per_mtok is None:
        return None, "none"
    return (prompt_tokens * (cfg.price_input_per_mtok or 0.0)
            + completion_tokens * (cfg.price_output_per_mtok or 0.0)) / 1e6, "config"


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """About 4 characters per token (English and code); only for tpm admission."""
    return sum(len(str(m.get("content", ""))) for m in messages) // 4 + 8


class ModelClient:
    """Calls one model. Safe to share across coroutines of one event loop."""

    def __init__(self, cfg: ModelConfig, *, backoff_base_s: float = 1.0,
                 backoff_max_s: float = 60.0, max_retry_after_s: float = 300.0):
        self.cfg = cfg
        self.limiter = RateLimiter(cfg.max_concurrency, cfg.rpm, cfg.tpm)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_retry_after_s = max_retry_after_s
        """A Retry-After longer than this (a daily quota) ends the call as rate_limited."""
        self.requests = 0
        self.retries = 0

    def _api_key(self) -> str | None:
        if self.cfg.api_key_env:
            return os.environ.get(self.cfg.api_key_env) or None
        return NO_KEY_PLACEHOLDER if self.cfg.api_base else None

    def request_kwargs(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Everything sent to litellm except the key (safe to log or hash)."""
        cfg = self.cfg
        kw: dict[str, Any] = {
            "model": litellm_model_name(cfg),
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": cfg.max_output_tokens,
            "timeout": cfg.request_timeout_s,
            "num_retries": 0,
            "max_retries": 0,
        }
        if cfg.api_base:
            kw["api_base"] = cfg.api_base
        if cfg.temperature is not None:
            kw["temperature"] = cfg.temperature
        if cfg.reasoning_effort:
            kw["reasoning_effort"] = cfg.reasoning_effort
        kw.update(dict(cfg.extra_params or {}))
        return kw

    def _backoff_s(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # Never earlier than the server asked; spread siblings over a little extra.
            return retry_after + random.uniform(0.0, min(1.0, 0.1 * retry_after + 0.05))
        cap = min(self.backoff_max_s, self.backoff_base_s * (2 ** retry))
        return cap / 2 + random.uniform(0.0, cap / 2)  # "equal jitter"

    def _cost(self, resp: Any, prompt_tokens: int, completion_tokens: int) -> tuple[float, str]:
        cfg = self.cfg
        # A custom endpoint is not billed at the provider's list price even when the
        # model name matches one litellm knows, so api_base configs use their own prices.
        if not cfg.api_base:
            try:
                cost = litellm_module().completion_cost(completion_response=resp,
                                                        model=cfg.model_id)
                if cost is not None and (cost > 0 or prompt_tokens + completion_tokens == 0):
                    return float(cost), "litellm"
            except Exception:  # litellm does not know the model: fall back to the config
                pass
        if cfg.price_input_per_mtok is None and cfg.price_output_per_mtok is None:
            return 0.0, "none"
        cost = (prompt_tokens * (cfg.price_input_per_mtok or 0.0)
                + completion_tokens * (cfg.price_output_per_mtok or 0.0)) / 1e6
        return cost, "config"

    async def complete(self, messages: list[dict[str, Any]]) -> CallResult:
        """One logical call with retries. Never raises for API failures: they are data."""
        litellm = litellm_module()
        cfg = self.cfg
        t_start = time.monotonic()
        key = self._api_key()
        if cfg.api_key_env and key is None:
            return CallResult(failure=FailureClass.AUTH,
                              message=f"{cfg.api_key_env} is not set in the environment")
        kwargs = self.request_kwargs(messages)
        est = estimate_prompt_tokens(messages)
        result = CallResult()
        for retry in range(cfg.max_retries + 1):
            retry_after: float | None = None
            async with self.limiter.semaphore:
                await self.limiter.admit(est)
                self.requests += 1
                result.requests += 1
                self.limiter.in_flight += 1
                try:
                    # Our own deadline as well: litellm's timeout covers the HTTP request,
                    # not the rest of its machinery.
                    resp = await asyncio.wait_for(
                        litellm.acompletion(api_key=key, **kwargs),
                        timeout=cfg.request_timeout_s + 10.0)
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001: classified by type below
                    failure, retryable = classify_exception(e)
                    retry_after = _retry_after_of(e)
                    result.failure = failure
                    result.message = _scrub(f"{type(e).__name__}: {e}", key)[:2000]
                else:
                    return self._success(result, resp, est, t_start)
                finally:
                    self.limiter.in_flight -= 1
            if failure is FailureClass.RATE_LIMITED:
                self.limiter.settle(est, 0)
            if not retryable or retry >= cfg.max_retries:
                break
            if retry_after is not None and retry_after > self.max_retry_after_s:
                result.message += (f" (Retry-After {retry_after:.0f} s > "
                                   f"{self.max_retry_after_s:.0f} s: not waiting)")
                break
            if retry_after is not None and failure is FailureClass.RATE_LIMITED:
                self.limiter.pause(retry_after)  # hold this model's other requests too
            delay = self._backoff_s(retry, retry_after)
            log.info("%s: %s, retry %d/%d in %.1f s", cfg.name, failure.value, retry + 1,
                     cfg.max_retries, delay)
            self.retries += 1
            await asyncio.sleep(delay)  # outside the semaphore: a waiting call holds no slot
        result.latency_s = time.monotonic() - t_start
        if result.requests > 1:
            result.message += f" (after {result.requests} requests)"
        return result

    def _success(self, result: CallResult, resp: Any, est: int, t_start: float) -> CallResult:
        usage = getattr(resp, "usage", None)
        result.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        result.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self.limiter.settle(est, result.prompt_tokens + result.completion_tokens)
        choices = getattr(resp, "choices", None) or []
        if choices:
            msg = choices[0].message
            result.text = getattr(msg, "content", None) or ""
            result.finish_reason = getattr(choices[0], "finish_reason", None)
        else:
            result.text = ""
        result.response_id = getattr(resp, "id", None)
        result.cost_usd, result.cost_source = self._cost(
            resp, result.prompt_tokens, result.completion_tokens)
        result.failure = None
        result.message = ""
        result.latency_s = time.monotonic() - t_start
        return result


def _scrub(text: str, key: str | None) -> str:
    if key and key != NO_KEY_PLACEHOLDER and len(key) >= 8:
        text = text.replace(key, "***")
    return text
