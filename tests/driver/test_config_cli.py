"""The Hydra entry point: composition, typos, value checks (no Ray needed)."""

import subprocess

from tests.driver.conftest import REPO, scrubbed_env, sweep_cmd


def _run(*args):
    return subprocess.run(sweep_cmd(*args), cwd=REPO, env=scrubbed_env(), capture_output=True,
                          text=True, timeout=120)


def test_cfg_job_shows_the_composed_config():
    out = _run("--cfg", "job", "model=opus47", "attempts=3")
    assert out.returncode == 0, out.stderr
    assert "attempts: 3" in out.stdout
    assert "name: opus47" in out.stdout and "anthropic/" in out.stdout


def test_typo_in_an_override_fails_naming_the_nearest_key_even_with_plus(tmp_path):
    # Hydra's own hint for `atempts=3` is `+atempts=3`, which composed and ran a full sweep
    # with attempts still 1. Both forms now fail before anything runs, naming `attempts`.
    for override in ("atempts=3", "+atempts=3", "++atempts=3", "+eval.wrld_size=4"):
        out = subprocess.run(sweep_cmd(override, "sweep.root=" + str(tmp_path)), cwd=tmp_path,
                             env=scrubbed_env(), capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, (override, out.stderr)
        wanted = "eval.world_size" if "wrld" in override else "attempts"
        assert f"did you mean {wanted}?" in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []  # a refused command leaves nothing behind


def test_composed_config_with_an_appended_key_is_refused_by_the_driver():
    from pkb_ray.config import compose_config
    from pkb_ray.driver.run import EXIT_BAD_INPUT, run_sweep

    assert run_sweep(compose_config(["+atempts=3"])) == EXIT_BAD_INPUT


def test_readme_every_model_command_composes():
    # The README's cluster-wide command, word for word, with --cfg job.
    out = _run("models=all", "attempts=3", "cluster.address=auto", "--cfg", "job")
    assert out.returncode == 0, out.stderr
    assert "models: all" in out.stdout and "attempts: 3" in out.stdout


def test_models_all_and_a_list_resolve_to_model_configs():
    from omegaconf import OmegaConf

    from pkb_ray.config import compose_config
    from pkb_ray.driver.run import resolve_sweep_models
    from pkb_ray.generation.models import api_model_names

    every = resolve_sweep_models(OmegaConf.to_object(compose_config(["models=all"])))
    assert [m.name for m in every] == api_model_names() and len(every) >= 40
    two = resolve_sweep_models(OmegaConf.to_object(compose_config(["models=[opus47,gpt55]"])))
    assert [m.name for m in two] == ["opus47", "gpt55"]


def test_bad_value_fails_naming_the_key_and_choices(tmp_path):
    out = subprocess.run(sweep_cmd("eval.device=gpu", "sweep.root=" + str(tmp_path)), cwd=tmp_path,
                         env=scrubbed_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "eval.device='gpu' is not one of auto, cuda, cpu" in out.stderr


def test_unknown_model_group_option_is_refused():
    out = _run("model=opus99")
    assert out.returncode != 0 and "opus99" in out.stderr


def test_a_misspelled_model_or_problem_set_is_one_line_naming_the_nearest(tmp_path):
    """Hydra's own error is 66 lines listing every model, and a HYDRA_FULL_ERROR hint."""
    for override, wanted in (("model=opus", "unknown model 'opus'; did you mean opus48, opus47, opus46?"),
                             ("problems=smok", "unknown problem set 'smok'; did you mean smoke?"),
                             ("mode=agnt", "unknown mode 'agnt'; did you mean agent?")):
        out = subprocess.run(sweep_cmd(override, "sweep.root=" + str(tmp_path)), cwd=tmp_path,
                             env=scrubbed_env(), capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, (override, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith(f"pkb: {wanted} ("), out.stderr
    assert list(tmp_path.iterdir()) == []


def test_models_list_and_problem_subsets_compose():
    out = _run("--cfg", "job", "models=[opus47,gpt55]", "problems=collectives")
    assert out.returncode == 0, out.stderr
    assert "- opus47" in out.stdout and "- gpt55" in out.stdout
    assert "- reduce_scatter" in out.stdout
    out = _run("--cfg", "job", "problems.ids=[allreduce,allgather]")
    assert "- allgather" in out.stdout


def test_bad_timing_values_fail_naming_the_key(tmp_path):
    out = subprocess.run(sweep_cmd("eval.timing.gate_timeout_ms=0", "eval.timing.max_calls=5",
                                   "eval.timing.max_batch_calls=0",
                                   "sweep.root=" + str(tmp_path)), cwd=tmp_path,
                         env=scrubbed_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "eval.timing.gate_timeout_ms=0.0 must be > 0" in out.stderr
    assert "eval.timing.max_calls=5 must be >= eval.timing.min_calls=20" in out.stderr
    assert "eval.timing.max_batch_calls=0 must be an integer >= 1" in out.stderr


def test_pkb_sweep_refuses_typos_and_bad_values_like_sweep_py(tmp_path):
    import sys

    for override, wanted in (("atempts=3", "did you mean attempts?"),
                             ("attempts=abc", "could not be converted to Integer")):
        out = subprocess.run([sys.executable, "-m", "pkb_ray.cli", "sweep", override,
                              "sweep.root=" + str(tmp_path)], cwd=tmp_path,
                             env=scrubbed_env(PYTHONPATH=str(REPO)), capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2 and wanted in out.stderr, (override, out.stderr)
    assert list(tmp_path.iterdir()) == []


def test_node_gpus_must_hold_a_group_and_is_refused_with_exclusive():
    import pytest

    from pkb_ray.config import compose_config
    from pkb_ray.config.validate import ConfigError, validate

    validate(compose_config(["cluster.node_gpus=2", "eval.world_size=2"]))
    with pytest.raises(ConfigError, match=r"cluster.node_gpus=1 must be an integer >= eval.world_size \(2\)"):
        validate(compose_config(["cluster.node_gpus=1", "eval.world_size=2"]))
    with pytest.raises(ConfigError, match="cannot promise an evaluation alone"):
        validate(compose_config(["cluster.node_gpus=2", "eval.exclusive=true"]))


def test_share_nodes_is_refused_with_a_share_of_a_node_or_cpu_placement():
    import pytest

    from pkb_ray.config import compose_config
    from pkb_ray.config.validate import ConfigError, validate

    validate(compose_config(["cluster.share_nodes=true"]))
    with pytest.raises(ConfigError, match="cluster.share_nodes=true with cluster.node_gpus=2"):
        validate(compose_config(["cluster.share_nodes=true", "cluster.node_gpus=2"]))
    with pytest.raises(ConfigError, match="cluster.share_nodes=true with cluster.evaluator_placement=cpu"):
        validate(compose_config(["cluster.share_nodes=true", "cluster.evaluator_placement=cpu"]))
