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


def test_typo_in_an_override_fails_naming_the_key():
    out = _run("attempt=3")
    assert out.returncode != 0
    assert "attempt" in out.stderr and "not in" in out.stderr


def test_bad_value_fails_naming_the_key_and_choices(tmp_path):
    out = subprocess.run(sweep_cmd("eval.device=gpu", "sweep.root=" + str(tmp_path)), cwd=tmp_path,
                         env=scrubbed_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "eval.device='gpu' is not one of auto, cuda, cpu" in out.stderr


def test_unknown_model_group_option_is_refused():
    out = _run("model=opus99")
    assert out.returncode != 0 and "opus99" in out.stderr


def test_models_list_and_problem_subsets_compose():
    out = _run("--cfg", "job", "models=[opus47,gpt55]", "problems=collectives")
    assert out.returncode == 0, out.stderr
    assert "- opus47" in out.stdout and "- gpt55" in out.stdout
    assert "- reduce_scatter" in out.stdout
    out = _run("--cfg", "job", "problems.ids=[allreduce,allgather]")
    assert "- allgather" in out.stdout


def test_bad_timing_values_fail_naming_the_key(tmp_path):
    out = subprocess.run(sweep_cmd("eval.timing.gate_timeout_ms=0", "eval.timing.max_calls=5",
                                   "sweep.root=" + str(tmp_path)), cwd=tmp_path,
                         env=scrubbed_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "eval.timing.gate_timeout_ms=0.0 must be > 0" in out.stderr
    assert "eval.timing.max_calls=5 must be >= eval.timing.min_calls=20" in out.stderr
