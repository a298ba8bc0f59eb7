"""The sweep's plan asks one GPU node for its hardware profile through a real NodeEvaluator
actor. No GPU here: a Ray node that advertises 2 GPUs, and the profile that node would have
cached under its fingerprint (nvidia-smi is absent, so the fingerprint names no GPU, the
same one in the actor as here)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from pkb_ray.config.schema import ModelConfig, RootConfig
from pkb_ray.driver.hardware_probe import mixed_gpus_note, node_hardware_profile, prompt_profile
from pkb_ray.engine import hardware


def test_no_probe_on_cpu_or_without_api_models():
    cfg = RootConfig()
    api = ModelConfig(name="m", provider="openai_compatible", model_id="m", api_base="http://127.0.0.1:9")
    expert = ModelConfig(name="expert", provider="expert")
    # Neither starts Ray (it is not running here): no prompt is built, or there is no GPU.
    assert prompt_profile(cfg, "cpu", [api]) is None
    assert prompt_profile(cfg, "cuda", [expert]) is None


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
def test_the_plan_reads_the_node_profile_through_its_actor(gpu_node, tmp_path):
    import ray

    from tests.generation.test_hardware_text import h200x2

    from pkb_ray.engine.node.node_evaluator import gpu_nodes_in_cluster

    assert [(n["gpus"], n["gpu_type"]) for n in gpu_nodes_in_cluster()] == [(2, "H200")]
    fp = hardware.fingerprint("cuda", (0, 1))  # what the actor holding GPUs 0,1 computes
    hardware.save_profile(tmp_path, dataclasses.replace(h200x2(), fingerprint=fp))
    profile, why = node_hardware_profile(2, str(tmp_path), timeout_s=120)
    assert profile is not None, why
    assert profile.fingerprint == fp and profile.gpu_name == "NVIDIA H200" and profile.links["0->1"] == "NV18"
    # The actor is killed: the node's GPUs come back for the evaluators (Ray frees them
    # asynchronously; the evaluators' placement group waits for them).
    deadline = time.monotonic() + 60
    while ray.available_resources().get("GPU") != 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ray.available_resources().get("GPU") == 2
    none, why = node_hardware_profile(4, str(tmp_path))
    assert none is None and "no alive node has >= 4 GPUs" in why


def test_a_mixed_cluster_is_named():
    h200 = {"node_id": "a", "address": "10.0.0.1", "gpus": 8, "gpu_type": "H200"}
    h100 = {"node_id": "b", "address": "10.0.0.2", "gpus": 8, "gpu_type": "H100"}
    assert mixed_gpus_note([h200, dict(h200, node_id="c")]) == ""
    note = mixed_gpus_note([h200, h100, dict(h100, node_id="d")])
    assert "1 node(s) of 8 x H200" in note and "2 node(s) of 8 x H100" in note
    assert "describe node 10.0.0.1 (8 x H200)" in note
    assert "4 x H200" in mixed_gpus_note([h200, dict(h200, gpus=4)])  # same type, other count


@pytest.mark.slow  # a Ray cluster
def test_a_sweep_keeps_the_profile_its_prompts_were_written_from(gpu_node, tmp_path, capsys):
    """Re-measured figures, or no figures (a busy cluster), must not change a resumed
    sweep's prompts (every API cell would be planned and paid for again); other GPUs are
    refused, naming both; a first run without a profile keeps that too."""
    from pkb_ray.driver.checks import Refused
    from pkb_ray.driver.hardware_probe import PROFILE_FILE, keep_profile, sweep_profile
    from tests.generation.test_hardware_text import h200x2

    cfg = RootConfig()
    cfg.eval.cache_dir = str(tmp_path / "cache")
    api = [ModelConfig(name="m", provider="openai_compatible", model_id="m", api_base="http://127.0.0.1:9")]
    fp = hardware.fingerprint("cuda", (0, 1))
    first = dataclasses.replace(h200x2(), fingerprint=fp)
    hardware.save_profile(cfg.eval.cache_dir, first)
    sweep_dir = tmp_path / "sweeps" / "s"

    chosen = sweep_profile(cfg, "cuda", api, sweep_dir)
    assert chosen.profile == first and not sweep_dir.exists()  # planning writes nothing
    keep_profile(sweep_dir, chosen)
    assert (sweep_dir / PROFILE_FILE).exists()
    # Measured again with other figures: the sweep keeps the first ones.
    hardware.save_profile(cfg.eval.cache_dir, dataclasses.replace(first, hbm_bw_gbps=first.hbm_bw_gbps * 0.97))
    again = sweep_profile(cfg, "cuda", api, sweep_dir)
    assert again.profile == first and again.to_keep is None
    # No node can be probed (none has 4 GPUs): the kept profile, said.
    cfg.eval.world_size = 4
    assert sweep_profile(cfg, "cuda", api, sweep_dir).profile == first
    assert "as on this sweep's earlier runs, 2 x NVIDIA H200" in capsys.readouterr().err
    # Other GPUs now: refused.
    cfg.eval.world_size = 2
    hardware.save_profile(cfg.eval.cache_dir, dataclasses.replace(first, gpu_name="NVIDIA H100"))
    with pytest.raises(Refused):
        sweep_profile(cfg, "cuda", api, sweep_dir)
    err = capsys.readouterr().err
    assert "prompted for 2 x NVIDIA H200" in err and "now have 2 x NVIDIA H100" in err
    # sweep.fresh measures again.
    cfg.sweep.fresh = True
    assert sweep_profile(cfg, "cuda", api, sweep_dir).profile.gpu_name == "NVIDIA H100"
    # A first run whose probe failed keeps "not measured": a later probe changes nothing.
    cfg.sweep.fresh, cfg.eval.world_size = False, 4
    other = tmp_path / "sweeps" / "t"
    keep_profile(other, sweep_profile(cfg, "cuda", api, other))
    cfg.eval.world_size = 2
    assert sweep_profile(cfg, "cuda", api, other).profile is None
    assert "written without a measured hardware profile" in capsys.readouterr().err
