"""The client through the real litellm path against a local OpenAI-compatible server:
concurrency, Retry-After, 5xx retries, timeouts, malformed answers, costs."""

from __future__ import annotations

import asyncio
import email.utils
import time

from pkb_ray.generation.client import ModelClient, litellm_module, parse_retry_after
from tests.scripted_server import Reply
from pkb_ray.generation.ratelimit import TokenBucket
from pkb_ray.records import FailureClass

from .conftest import FAST_RETRY, local_cfg

MSG = [{"role": "user", "content": "write a kernel"}]


def run(coro):
    return asyncio.run(coro)


def test_concurrency_limit_is_held(srv):
    srv.set_default("conc", Reply(delay_s=0.3))
    client = ModelClient(local_cfg(srv, "conc", max_concurrency=3), **FAST_RETRY)

    async def main():
        return await asyncio.gather(*(client.complete(MSG) for _ in range(12)))

    results = run(main())
    assert all(r.failure is None for r in results)
    assert len(srv.requests_for("conc")) == 12
    assert srv.max_in_flight == 3  # the server never saw more than the limit at once


def test_retry_after_is_honoured(srv):
    srv.script("rl", [Reply(status=429, headers={"Retry-After": "1"})])
    client = ModelClient(local_cfg(srv, "rl"), **FAST_RETRY)
    r = run(client.complete(MSG))
    assert r.failure is None and r.requests == 2 and client.retries == 1
    first, second = srv.requests_for("rl")
    assert first.status == 429 and second.status == 200
    assert second.t_start - first.t_end >= 1.0  # waited at least what the server asked


def test_retry_after_pauses_the_models_other_requests(srv):
    # One 429 with Retry-After holds every request of the model, not only the one retried.
    srv.script("rl2", [Reply(status=429, headers={"Retry-After": "1"})])
    client = ModelClient(local_cfg(srv, "rl2", max_concurrency=1), **FAST_RETRY)

    async def main():
        first = asyncio.create_task(client.complete(MSG))
        await asyncio.sleep(0.05)
        return await asyncio.gather(first, client.complete(MSG))

    assert all(r.failure is None for r in run(main()))
    reqs = srv.requests_for("rl2")
    assert len(reqs) == 3 and reqs[0].status == 429
    assert min(r.t_start for r in reqs[1:]) - reqs[0].t_end >= 1.0


def test_retry_after_parsing():
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= parse_retry_after({"Retry-After": date}, now=now) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_server_errors_are_retried(srv):
    srv.script("e500", [Reply(status=500), Reply(status=503)])
    client = ModelClient(local_cfg(srv, "e500"), **FAST_RETRY)
    r = run(client.complete(MSG))
    assert r.failure is None and r.requests == 3 and r.text
    assert [q.status for q in srv.requests_for("e500")] == [500, 503, 200]


def test_persistent_server_errors_end_as_server_error(srv):
    srv.set_default("down", Reply(status=502))
    client = ModelClient(local_cfg(srv, "down", max_retries=2), **FAST_RETRY)
    r = run(client.complete(MSG))
    assert r.failure is FailureClass.SERVER_ERROR and r.failure.is_transient
    assert r.requests == 3 == len(srv.requests_for("down"))  # litellm itself retried nothing


def test_timeouts_are_classified(srv):
    srv.set_default("hang", Reply(delay_s=5.0))
    client = ModelClient(local_cfg(srv, "hang", request_timeout_s=0.5, max_retries=1), **FAST_RETRY)
    r = run(client.complete(MSG))
    assert r.failure is FailureClass.GENERATION_TIMEOUT and r.requests == 2


def test_malformed_responses_are_classified(srv):
    srv.set_default("junk", Reply(raw_body="{not json"))
    client = ModelClient(local_cfg(srv, "junk", max_retries=1), **FAST_RETRY)
    r = run(client.complete(MSG))
    assert r.failure is FailureClass.SERVER_ERROR and r.requests == 2


def test_auth_and_bad_request_are_not_retried(srv):
    srv.set_default("auth", Reply(status=401))
    srv.set_default("bad", Reply(status=400))
    a = run(ModelClient(local_cfg(srv, "auth"), **FAST_RETRY).complete(MSG))
    b = run(ModelClient(local_cfg(srv, "bad"), **FAST_RETRY).complete(MSG))
    assert a.failure is FailureClass.AUTH and a.requests == 1
    assert b.failure is FailureClass.BAD_REQUEST and b.requests == 1


def test_missing_key_makes_no_request(srv, monkeypatch):
    monkeypatch.delenv("PKB_TEST_NO_SUCH_KEY", raising=False)
    cfg = local_cfg(srv, "nokey", api_key_env="PKB_TEST_NO_SUCH_KEY")
    r = run(ModelClient(cfg).complete(MSG))
    assert r.failure is FailureClass.AUTH and "PKB_TEST_NO_SUCH_KEY" in r.message
    assert r.requests == 0 and not srv.requests_for("nokey")


def test_key_comes_from_the_environment_and_openai_key_never_leaks(srv, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key-must-not-leak")
    monkeypatch.setenv("PKB_TEST_KEY", "sk-pkb-test-key-123456")
    run(ModelClient(local_cfg(srv, "keyed", api_key_env="PKB_TEST_KEY")).complete(MSG))
    run(ModelClient(local_cfg(srv, "keyless")).complete(MSG))
    assert srv.requests_for("keyed")[0].authorization == "Bearer sk-pkb-test-key-123456"
    assert "sk-real-openai" not in srv.requests_for("keyless")[0].authorization


def test_tokens_and_cost_are_summed(srv):
    srv.set_default("priced", Reply(prompt_tokens=1000, completion_tokens=250))
    client = ModelClient(local_cfg(srv, "priced", price_input_per_mtok=2.0,
                                   price_output_per_mtok=8.0), **FAST_RETRY)

    async def main():
        return await asyncio.gather(*(client.complete(MSG) for _ in range(5)))

    results = run(main())
    assert all(r.cost_source == "config" for r in results)
    assert sum(r.prompt_tokens for r in results) == 5000
    assert sum(r.completion_tokens for r in results) == 1250
    assert abs(sum(r.cost_usd for r in results) - 5 * (1000 * 2 + 250 * 8) / 1e6) < 1e-12


def test_litellm_price_is_used_when_it_knows_the_model(srv):
    # A real ModelResponse from the local server, priced as if it came from OpenAI's gpt-4.1.
    litellm = litellm_module()
    srv.set_default("gpt-4.1", Reply(prompt_tokens=1_000_000, completion_tokens=1_000_000))
    resp = run(litellm.acompletion(model="openai/gpt-4.1", messages=MSG, api_base=srv.url,
                                   api_key="sk-x", num_retries=0))
    from pkb_ray.config.schema import ModelConfig

    cfg = ModelConfig(name="gpt41", provider="openai", model_id="openai/gpt-4.1",
                      price_input_per_mtok=100.0, price_output_per_mtok=100.0)
    cost, source = ModelClient(cfg)._cost(resp, 1_000_000, 1_000_000)
    info = litellm.model_cost["gpt-4.1"]
    assert source == "litellm"
    assert abs(cost - 1e6 * (info["input_cost_per_token"] + info["output_cost_per_token"])) < 1e-6


def test_token_bucket_spaces_requests():
    async def main():
        bucket = TokenBucket(rate_per_min=600, capacity=1)  # 10 per second, no burst
        t0 = time.monotonic()
        for _ in range(5):
            await bucket.acquire(1)
        return time.monotonic() - t0

    assert run(main()) >= 0.39  # the first is free, four more at 0.1 s each


def test_client_survives_a_new_event_loop(srv):
    # The driver's tests and scripts call asyncio.run repeatedly with one service.
    srv.set_default("loops", Reply(delay_s=0.1))
    client = ModelClient(local_cfg(srv, "loops", max_concurrency=1, rpm=600, tpm=10**6))

    async def burst():
        return await asyncio.gather(*(client.complete(MSG) for _ in range(3)))

    for _ in range(2):
        assert all(r.failure is None for r in run(burst()))
    assert len(srv.requests_for("loops")) == 6


def test_a_long_retry_after_ends_the_call_instead_of_blocking(srv):
    # A daily quota answers Retry-After: 86400; the cell ends rate_limited (transient).
    srv.set_default("quota", Reply(status=429, headers={"Retry-After": "86400"}))
    r = run(ModelClient(local_cfg(srv, "quota"), **FAST_RETRY).complete(MSG))
    assert r.failure is FailureClass.RATE_LIMITED and r.requests == 1
    assert "not waiting" in r.message
