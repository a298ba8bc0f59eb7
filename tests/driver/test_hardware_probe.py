"""The sweep's plan asks its own evaluators (real NodeEvaluator actors, one per GPU node)
for the hardware profile its prompts describe. No GPU here: a Ray node that advertises 2
GPUs, and the profile that node would have cached under its fingerprint (nvidia-smi is
absent, so the fingerprint names no GPU, the same one in the actor as here)."""

from __future__ import annotations

import dataclasses

import pytest

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.hardware_probe import evaluator_profile, mixed_gpus_note, prompt_profile
from pkb_ray.engine import hardware


def test_no_probe_on_cpu_or_without_api_models():
    cfg = RootConfig()
    api = ModelConfig(name="m", provider="openai_compatible", model_id="m", api_base="http://127.0.0.1:9")
    expert = ModelConfig(name="expert", provider="expert")
    # Neither asks a node: no prompt is built, or there is no GPU.
    def measure():
        raise AssertionError("no node should be asked")

    assert prompt_profile(cfg, "cpu", [api], measure) is None
    assert prompt_profile(cfg, "cuda", [expert], measure) is None


@pytest.fixture
def gpu_node():
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 2,
                                                            "resources": {"accelerator_type:H200": 1}})
    ray.init(address=cluster.address)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.mark.slow  # a Ray cluster
def test_the_plan_reads_the_node_profile_through_the_evaluators(gpu_node, tmp_path):
    from tests.generation.test_hardware_text import h200x2

    from pkb_ray.driver.ray_runtime import close_evaluators
    from pkb_ray.engine import gpu_nodes_in_cluster, start_node_evaluators

    assert [(n["gpus"], n["gpu_type"]) for n in gpu_nodes_in_cluster()] == [(2, "H200")]
    fp = hardware.fingerprint("cuda", (0, 1))  # what the actor holding GPUs 0,1 computes
    hardware.save_profile(tmp_path, dataclasses.replace(h200x2(), fingerprint=fp))
    actors = start_node_evaluators("cuda", 2, ready_timeout_s=120)
    try:
        profile = evaluator_profile(actors, 2, str(tmp_path), timeout_s=120)
    finally:
        close_evaluators(actors)
    assert profile is not None
    assert profile.fingerprint == fp and profile.gpu_name == "NVIDIA H200" and profile.links["0->1"] == "NV18"
    with pytest.raises(RuntimeError, match="no evaluator"):
        evaluator_profile([], 2, str(tmp_path))


def test_a_mixed_cluster_is_named():
    h200 = {"node_id": "a", "address": "10.0.0.1", "gpus": 8, "gpu_type": "H200"}
    h100 = {"node_id": "b", "address": "10.0.0.2", "gpus": 8, "gpu_type": "H100"}
    assert mixed_gpus_note([h200, dict(h200, node_id="c")]) == ""
    note = mixed_gpus_note([h200, h100, dict(h100, node_id="d")])
    assert "1 node(s) of 8 x H200" in note and "2 node(s) of 8 x H100" in note
    assert "describe node 10.0.0.1 (8 x H200)" in note
    assert "4 x H200" in mixed_gpus_note([h200, dict(h200, gpus=4)])  # same type, other count


def test_a_sweep_keeps_the_profile_its_prompts_were_written_from(tmp_path, capsys):
    """Re-measured figures, or no figures (a busy cluster), must not change a resumed
    sweep's prompts (every API cell would be planned and paid for again); other GPUs are
    refused, naming both; a first run without a profile keeps that too."""
    from pkb_ray.driver.checks import Refused
    from pkb_ray.driver.hardware_probe import PROFILE_FILE, keep_profile, sweep_profile
    from tests.generation.test_hardware_text import h200x2

    cfg = RootConfig()
    api = [ModelConfig(name="m", provider="openai_compatible", model_id="m", api_base="http://127.0.0.1:9")]
    first = h200x2()
    sweep_dir = tmp_path / "sweeps" / "s"

    def none_there():
        raise RuntimeError("no alive node has >= 4 GPUs")

    chosen = sweep_profile(cfg, "cuda", api, sweep_dir, measure=lambda: first)
    assert chosen.profile == first and not sweep_dir.exists()  # planning writes nothing
    keep_profile(sweep_dir, chosen)
    assert (sweep_dir / PROFILE_FILE).exists()
    # Measured again with other figures: the sweep keeps the first ones.
    other_figures = dataclasses.replace(first, hbm_bw_gbps=first.hbm_bw_gbps * 0.97)
    again = sweep_profile(cfg, "cuda", api, sweep_dir, measure=lambda: other_figures)
    assert again.profile == first and again.to_keep is None
    # No node can be probed: the kept profile, said.
    assert sweep_profile(cfg, "cuda", api, sweep_dir, measure=none_there).profile == first
    assert "as on this sweep's earlier runs, 2 x NVIDIA H200" in capsys.readouterr().err
    # A dry run asks no node: the kept profile.
    assert sweep_profile(cfg, "cuda", api, sweep_dir, measure=None).profile == first
    # Other GPUs now: refused.
    h100 = dataclasses.replace(first, gpu_name="NVIDIA H100")
    with pytest.raises(Refused):
        sweep_profile(cfg, "cuda", api, sweep_dir, measure=lambda: h100)
    err = capsys.readouterr().err
    assert "prompted for 2 x NVIDIA H200" in err and "now have 2 x NVIDIA H100" in err
    # sweep.fresh measures again.
    cfg.sweep.fresh = True
    assert sweep_profile(cfg, "cuda", api, sweep_dir, measure=lambda: h100).profile.gpu_name == "NVIDIA H100"
    # A first run whose probe failed keeps "not measured": a later probe changes nothing.
    cfg.sweep.fresh = False
    other = tmp_path / "sweeps" / "t"
    keep_profile(other, sweep_profile(cfg, "cuda", api, other, measure=none_there))
    assert "no hardware profile from the GPU nodes (RuntimeError: no alive node" in capsys.readouterr().err
    assert sweep_profile(cfg, "cuda", api, other, measure=lambda: first).profile is None
    assert "written without a measured hardware profile" in capsys.readouterr().err
