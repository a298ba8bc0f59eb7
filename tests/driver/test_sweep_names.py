"""A sweep named by default: from what it runs and the settings that change a cell's result,
so commands with other settings never share a leaderboard and the same command finds its own
sweep again (no Ray needed: the name is a function of the config)."""

from omegaconf import OmegaConf

from pkb_ray.config import compose_config
from pkb_ray.driver.done_check import remember_name, remembered_name
from pkb_ray.driver.identity import default_sweep_name


def _name(*overrides: str, models=("reference",), device="cpu") -> str:
    cfg = OmegaConf.to_object(compose_config(["model=reference", *overrides]))
    return default_sweep_name(cfg, list(models), device)


def test_settings_that_change_a_result_name_another_sweep():
    base = _name()
    assert base.startswith("reference-cpu-") and len(base.rsplit("-", 1)[1]) == 6
    for other in ("attempts=2", "eval.trials=3", "eval.world_size=4", "problems=smoke",
                  "problems.ids=[allreduce]", "eval.timing.min_calls=10", "eval.exclusive=true"):
        assert _name(other) != base, other
    assert _name("mode=agent").startswith("reference-agent-cpu-")


def test_where_it_runs_or_records_names_the_same_sweep():
    base = _name()
    for same in ("sweep.progress=false", "cluster.cpu_evaluators=2", "tracking.uri=sqlite:///x.db",
                 "budget_usd=10", "eval.cache_dir=/tmp/elsewhere", "sweep.root=/tmp/sweeps",
                 "cluster.node_type=4xH200"):
        assert _name(same) == base, same


def test_the_models_that_ran_and_the_device_read_in_the_name():
    # The default model on a machine without GPUs falls back to the reference: the name says so.
    cfg = OmegaConf.to_object(compose_config([]))
    assert default_sweep_name(cfg, ["reference"], "cpu").startswith("reference-cpu-")
    assert default_sweep_name(cfg, ["expert"], "cuda").startswith("expert-cuda-")
    cfg = OmegaConf.to_object(compose_config(["models=all"]))
    assert default_sweep_name(cfg, ["a", "b", "c", "d"], "cuda").startswith("all-cuda-")
    cfg = OmegaConf.to_object(compose_config(["models=[opus47,gpt55,o3,gpt41]"]))
    assert default_sweep_name(cfg, ["opus47", "gpt55", "o3", "gpt41"], "cuda").startswith("opus47+3more-cuda-")


def test_a_remembered_name_is_found_by_its_plan_digest(tmp_path):
    assert remembered_name(tmp_path, "d1") is None
    remember_name(tmp_path, "d1", "reference-cpu-abcdef")
    assert remembered_name(tmp_path, "d1") == "reference-cpu-abcdef"
    assert remembered_name(tmp_path, "d2") is None
