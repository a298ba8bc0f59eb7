"""eval.device=auto against the cluster's nodes (Ray's node records, as ray.nodes() gives)."""

import pytest

from pkb_ray.config import compose_config
from pkb_ray.config.validate import ConfigError
from pkb_ray.generation.device import decide_device
from omegaconf import OmegaConf

CPU_NODE = {"Alive": True, "Resources": {"CPU": 2.0}}
GPU_NODE = {"Alive": True, "Resources": {"CPU": 32.0, "GPU": 8.0}}
DEAD_GPU_NODE = {"Alive": False, "Resources": {"CPU": 32.0, "GPU": 8.0}}


def cfg(*overrides):
    return OmegaConf.to_object(compose_config(list(overrides)))


def test_auto_uses_gpu_nodes_with_enough_gpus():
    d = decide_device(cfg(), ["expert"], [CPU_NODE, GPU_NODE, DEAD_GPU_NODE])
    assert (d.device, d.size, d.placement, d.gpu_nodes) == ("cuda", "bench", "gpu_node", 1)
    assert d.notice is None and d.models is None


def test_auto_without_gpus_runs_the_cpu_self_check_for_the_default_model():
    d = decide_device(cfg(), ["expert"], [CPU_NODE])
    assert (d.device, d.size, d.placement, d.models) == ("cpu", "small", "cpu", ["reference"])
    assert "GPU evaluation needs GPU nodes" in d.notice


def test_auto_without_gpus_refuses_api_models_before_spending_money():
    with pytest.raises(ConfigError, match="eval.device=cpu"):
        decide_device(cfg("model=opus47"), ["opus47"], [CPU_NODE])


def test_world_size_larger_than_any_node_is_refused_for_cuda():
    with pytest.raises(ConfigError, match="eval.world_size"):
        decide_device(cfg("eval.device=cuda", "eval.world_size=16"), ["expert"], [GPU_NODE])


def test_self_check_follows_the_sources_not_the_names():
    from pkb_ray.config.schema import ModelConfig
    from pkb_ray.generation.models import load_model_config

    # any model whose source runs on CUDA only and calls no API gets the CPU self-check
    cuda_only = ModelConfig(name="my_experts", provider="expert")
    d = decide_device(cfg(), [cuda_only], [CPU_NODE])
    assert d.models == ["reference"] and d.device == "cpu"
    # the reference runs on CPU, so asking for it without GPUs is no case for a stand-in: it
    # runs there as asked (it was refused as a model that "writes CUDA candidates")
    d = decide_device(cfg(), [load_model_config("reference")], [CPU_NODE])
    assert (d.device, d.models) == ("cpu", None) and "evaluating on CPU" in d.notice
    # an API model limited to CUDA is never swapped for the self-check
    paid = ModelConfig(name="paid", provider="openai", model_id="openai/gpt-5", devices=["cuda"])
    with pytest.raises(ConfigError, match="paid"):
        decide_device(cfg(), [cuda_only, paid], [CPU_NODE])


def test_models_without_keys_are_skipped_in_one_line_grouped_by_variable(monkeypatch, capsys):
    from pkb_ray.driver.checks import usable_models
    from pkb_ray.generation.models import load_model_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    models = [load_model_config(n) for n in ("gpt41", "gpt5", "opus47", "reference")]
    assert [m.name for m in usable_models(models)] == ["reference"]
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err  # one line (no terminal here: not wrapped)
    assert "skipping 3 models without an API key" in err
    assert "ANTHROPIC_API_KEY unset: opus47; OPENAI_API_KEY unset: gpt41, gpt5" in err
