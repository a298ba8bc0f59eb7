"""Model configs: every one loads, resolves through litellm 1.106.0, and sends only the
parameters its provider accepts."""

from __future__ import annotations

import os

import pytest

from pkb_ray.generation.client import litellm_model_name, litellm_module
from pkb_ray.generation.models import (
    ModelConfigError,
    api_model_names,
    check_model_config,
    list_model_names,
    load_model_config,
    missing_api_key,
    resolve_models,
)

REPORTED_UPSTREAM = ["gpt55", "opus47", "gemini3pro", "glm51", "deepseekv4pro"]
PROVIDERS = {"openai", "anthropic", "gemini", "xai", "deepseek", "together_ai", "fireworks_ai",
             "mistral", "moonshot", "zai", "dashscope", "openrouter"}


def test_at_least_40_api_models_across_the_providers():
    names = api_model_names()
    assert len(names) >= 40, names
    cfgs = resolve_models(["all"])
    assert {c.provider for c in cfgs} >= PROVIDERS
    for n in REPORTED_UPSTREAM:
        assert n in names


@pytest.mark.parametrize("name", api_model_names())
def test_config_resolves_through_litellm(name):
    litellm = litellm_module()
    cfg = load_model_config(name)
    assert cfg.name == name and check_model_config(cfg) is None
    model, provider, _, _ = litellm.get_llm_provider(litellm_model_name(cfg))
    assert provider == cfg.provider, (name, provider)
    assert cfg.api_key_env and cfg.api_key_env.endswith("_API_KEY")
    assert cfg.max_concurrency >= 1 and cfg.max_output_tokens > 0
    assert cfg.price_input_per_mtok is not None and cfg.price_output_per_mtok is not None
    supported = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    if cfg.reasoning_effort is not None:
        assert "reasoning_effort" in supported, name
    if cfg.temperature is not None:
        assert "temperature" in supported, name
    info = litellm.model_cost.get(cfg.model_id) or litellm.model_cost.get(model)
    if info and info.get("max_output_tokens"):
        assert cfg.max_output_tokens <= info["max_output_tokens"], name


def test_opus47_sends_reasoning_effort_only():
    # Opus 4.7 answers HTTP 400 to temperature, top_p, top_k and a fixed thinking budget.
    cfg = load_model_config("opus47")
    assert cfg.model_id == "anthropic/claude-opus-4-7"
    assert cfg.temperature is None and cfg.reasoning_effort
    assert not {"temperature", "top_p", "top_k", "thinking", "budget_tokens"} & set(cfg.extra_params)
    # litellm maps reasoning_effort to adaptive thinking for this model, not a fixed budget.
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    thinking = AnthropicConfig.map_reasoning_effort(cfg.reasoning_effort, "claude-opus-4-7",
                                                    "anthropic")
    assert thinking and thinking.get("type") == "adaptive" and "budget_tokens" not in thinking


def test_unknown_key_fails_naming_file_and_key(tmp_path):
    (tmp_path / "typo.yaml").write_text("name: typo\nprovider: openai\nrpmm: 5\n")
    with pytest.raises(ModelConfigError) as e:
        load_model_config("typo", conf_dir=tmp_path)
    assert "typo.yaml" in str(e.value) and "rpmm" in str(e.value)
    (tmp_path / "other.yaml").write_text("name: wrong\nprovider: openai\n")
    with pytest.raises(ModelConfigError, match="file stem"):
        load_model_config("other", conf_dir=tmp_path)


def test_unknown_model_name_suggests_close_matches():
    with pytest.raises(ModelConfigError) as e:
        resolve_models(["opus74", "gpt55"])
    assert "opus47" in str(e.value) and "opus74" in str(e.value)


def test_all_excludes_pseudo_models_and_templates_but_may_add_them():
    names = [c.name for c in resolve_models(["all"])]
    assert "expert" not in names and "reference" not in names and "openai_compatible" not in names
    assert set(list_model_names()) - set(names) == {"expert", "reference", "openai_compatible"}
    both = [c.name for c in resolve_models(["all", "expert", "gpt55"])]
    assert both.count("gpt55") == 1 and both[-1] == "expert"


def test_openai_compatible_needs_base_and_model_id():
    with pytest.raises(ModelConfigError, match="model.model_id"):
        load_model_config("openai_compatible")
    cfg = load_model_config("openai_compatible",
                            ["model_id=Qwen/Qwen3-8B", "api_base=http://127.0.0.1:9/v1"])
    assert litellm_model_name(cfg) == "openai/Qwen/Qwen3-8B"
    assert missing_api_key(cfg) is None  # a keyless endpoint
    # Hydra's merge turns `???` into the schema default; check_model_config catches that.
    from pkb_ray.config.store import compose_config

    node = compose_config(["model=openai_compatible"]).model
    from pkb_ray.generation.models import as_model_config

    assert "model.api_base" in check_model_config(as_model_config(node))


def test_missing_api_key_names_the_variable(monkeypatch):
    cfg = load_model_config("deepseekv4pro")
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    assert missing_api_key(cfg) == "DEEPSEEK_API_KEY"
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-real")
    assert missing_api_key(cfg) is None
    assert missing_api_key(load_model_config("expert")) is None
    assert os.environ["DEEPSEEK_API_KEY"] == "sk-test-not-real"
