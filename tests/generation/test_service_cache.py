"""GenerationService and kernels_cache: cache hits and replay make no HTTP request, keys
never reach the cache, only paid answers are cached, writes survive SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from pkb_ray.generation.kernels_cache import KernelsCache
from tests.scripted_server import Reply
from pkb_ray.generation.service import GenerationService
from pkb_ray.records import FailureClass

from .conftest import FAST_RETRY, local_cfg, toy_problem

PROBLEMS = {"toy_allreduce": toy_problem(), "noexpert": toy_problem("noexpert", expert=False)}


def service(srv, name, cache_dir, replay_only=False, **cfg_kw):
    return GenerationService(local_cfg(srv, name, **cfg_kw), "builtin", str(cache_dir),
                             replay_only, problems=PROBLEMS, client_options=FAST_RETRY)


def gen(svc, attempt=1, **kw):
    return asyncio.run(svc.generate("toy_allreduce", attempt, **kw))


def test_generate_caches_and_a_new_service_makes_no_request(srv, tmp_path):
    g = gen(service(srv, "m", tmp_path))
    assert g.failure is None and not g.cached and "def solution(" in g.candidate_source
    assert g.prompt_hash and g.cost_usd > 0 and g.tokens > 0
    assert len(srv.requests_for("m")) == 1
    # a later sweep (a fresh service, as after a restart) over the same cell
    again = service(srv, "m", tmp_path)
    g2 = gen(again)
    assert g2.cached and g2.candidate_source == g.candidate_source and g2.cost_usd == g.cost_usd
    assert len(srv.requests_for("m")) == 1 and again.stats()["requests"] == 0
    # another attempt is another cell
    gen(again, attempt=2)
    assert len(srv.requests_for("m")) == 2


def test_replay_only_makes_no_request(srv, tmp_path):
    gen(service(srv, "r", tmp_path))
    replay = service(srv, "r", tmp_path, replay_only=True)
    assert gen(replay).cached
    missing = gen(replay, attempt=7)
    assert missing.failure is FailureClass.NO_CANDIDATE and "replay_only" in missing.message
    assert len(srv.requests_for("r")) == 1


def test_cache_key_follows_sampling_and_prompt(srv, tmp_path):
    gen(service(srv, "k", tmp_path))
    gen(service(srv, "k", tmp_path, temperature=0.2))
    gen(service(srv, "k", tmp_path), hardware="measured: 2 x H200")
    assert len(srv.requests_for("k")) == 3
    assert len(KernelsCache(tmp_path).keys()) == 3


def test_agent_turns_are_keyed_by_the_conversation(srv, tmp_path):
    svc = service(srv, "agent", tmp_path)
    g1 = gen(svc)
    history = [{"role": "assistant", "content": g1.response},
               {"role": "user", "content": "compile_error: fix line 3"}]
    g2 = gen(svc, turn=2, history=history)
    assert not g2.cached and g2.prompt == "compile_error: fix line 3"
    body = srv.requests_for("agent")[-1].body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert gen(service(srv, "agent", tmp_path), turn=2, history=history).cached
    other = history[:1] + [{"role": "user", "content": "incorrect: rank 1 off by 2"}]
    assert not gen(svc, turn=2, history=other).cached
    assert len(srv.requests_for("agent")) == 3


def test_no_code_is_cached_with_the_raw_response(srv, tmp_path):
    srv.set_default("chatty", Reply(text="I would use NVLink, but here is no code."))
    g = gen(service(srv, "chatty", tmp_path))
    assert g.failure is FailureClass.NO_CODE and g.response.startswith("I would use NVLink")
    assert gen(service(srv, "chatty", tmp_path)).failure is FailureClass.NO_CODE
    assert len(srv.requests_for("chatty")) == 1
    (entry,) = [KernelsCache(tmp_path).get(k) for k in KernelsCache(tmp_path).keys()]
    assert entry["failure"] == "no_code" and entry["response"].startswith("I would")


def test_transient_and_request_failures_are_not_cached(srv, tmp_path):
    srv.set_default("down", Reply(status=500))
    srv.set_default("denied", Reply(status=401))
    g = gen(service(srv, "down", tmp_path, max_retries=1))
    assert g.failure is FailureClass.SERVER_ERROR
    assert gen(service(srv, "denied", tmp_path)).failure is FailureClass.AUTH
    assert KernelsCache(tmp_path).keys() == []
    srv.set_default("down", Reply())  # the provider recovers: the cell is asked again
    assert gen(service(srv, "down", tmp_path)).failure is None
    assert len(srv.requests_for("down")) == 3


def test_keys_never_reach_the_cache(srv, tmp_path, monkeypatch):
    key = "sk-pkb-secret-value-0123456789"
    monkeypatch.setenv("PKB_TEST_SECRET", key)
    g = gen(service(srv, "secret", tmp_path, api_key_env="PKB_TEST_SECRET"))
    assert g.failure is None
    assert srv.requests_for("secret")[0].authorization == f"Bearer {key}"  # it was used
    files = list(tmp_path.rglob("*"))
    assert files and all(key not in f.read_text() for f in files if f.is_file())
    assert key not in json.dumps(g.__dict__, default=str)


def test_identical_concurrent_requests_share_one_call(srv, tmp_path):
    srv.set_default("dup", Reply(delay_s=0.3))
    svc = service(srv, "dup", tmp_path)

    async def main():
        return await asyncio.gather(*(svc.generate("toy_allreduce", 1) for _ in range(4)))

    results = asyncio.run(main())
    assert all(r.failure is None for r in results) and len(srv.requests_for("dup")) == 1


def test_pseudo_models_make_no_request(tmp_path):
    from pkb_ray.generation.models import load_model_config

    ref = GenerationService(load_model_config("reference"), "builtin", str(tmp_path),
                            problems=PROBLEMS)
    exp = GenerationService(load_model_config("expert"), "builtin", str(tmp_path),
                            problems=PROBLEMS)
    r = asyncio.run(ref.generate("toy_allreduce", 1))
    assert r.candidate_source == PROBLEMS["toy_allreduce"].reference_source and r.failure is None
    assert asyncio.run(exp.generate("toy_allreduce", 1)).candidate_source == \
        PROBLEMS["toy_allreduce"].expert_source
    none = asyncio.run(exp.generate("noexpert", 1))
    assert none.failure is FailureClass.NO_CANDIDATE and none.candidate_source is None
    assert ref.stats()["requests"] == 0 and KernelsCache(tmp_path).keys() == []


def test_service_is_picklable_before_use(srv, tmp_path):
    import pickle

    from pkb_ray.generation.models import load_model_config

    svc = GenerationService(load_model_config("opus47"), "builtin", str(tmp_path), True)
    clone = pickle.loads(pickle.dumps(svc))
    assert clone.cfg.name == "opus47" and clone.replay_only


def test_sigkill_never_leaves_a_torn_entry(tmp_path):
    # A writer rewriting one large entry in a loop, killed mid-write many times over.
    writer = textwrap.dedent(f"""
        import sys
        from pkb_ray.generation.kernels_cache import KernelsCache
        c = KernelsCache({str(tmp_path)!r})
        i = 0
        while True:
            c.put("ab" + "0" * 62, {{"i": i, "blob": "x" * 2_000_000}})
            i += 1
            if i == 1:
                print("ready", flush=True)
    """)
    cache = KernelsCache(tmp_path)
    for round_ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.2 + 0.1 * round_)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        entry = cache.get("ab" + "0" * 62)
        assert entry is not None and len(entry["blob"]) == 2_000_000
    assert [p.name for p in tmp_path.rglob("*.json")] == ["ab" + "0" * 62 + ".json"]
    leftovers = list(tmp_path.rglob(".*.tmp"))  # a killed writer's half-written temp files
    assert cache.remove_stale_tmp(max_age_s=0.0) == len(leftovers)
    assert not list(tmp_path.rglob(".*.tmp")) and cache.get("ab" + "0" * 62) is not None


def test_budget_stop_replays_cached_cells_and_calls_nothing_new(srv, tmp_path):
    gen(service(srv, "budget", tmp_path))
    svc = service(srv, "budget", tmp_path)
    assert gen(svc, allow_api_calls=False).cached
    stopped = gen(svc, attempt=2, allow_api_calls=False)
    assert stopped.failure is FailureClass.BUDGET_EXHAUSTED and stopped.failure.is_transient
    assert len(srv.requests_for("budget")) == 1


def test_builtin_problem_end_to_end(srv, tmp_path):
    svc = GenerationService(local_cfg(srv, "e2e"), "builtin", str(tmp_path))
    g = asyncio.run(svc.generate("allreduce", 1))
    assert g.failure is None and g.candidate_source
    body = srv.requests_for("e2e")[0].body
    assert "dist.all_reduce" in body["messages"][1]["content"]
