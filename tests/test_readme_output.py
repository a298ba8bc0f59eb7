"""Every README command that runs on a CPU in seconds, run as a user types it at COLUMNS=100:
no line of what it prints is wider than 100 characters (a fresh clone's user read lines of
up to 760). Commands that need a key, a GPU, a server or minutes run as their `--dry-run`, or
are named below with the reason they are not run; a README command in neither list fails.
The sweep that runs for real runs twice: the second time it answers "nothing to run"."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme_commands import COMMANDS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
WIDTH = 100

DRY = "as its --dry-run: it needs an API key, GPUs, a cluster or minutes"
AS_WRITTEN = "as written"
RUN = {
    "python3 sweep.py": DRY,
    "python sweep.py model=opus47 attempts=3": DRY,
    "python sweep.py models=all attempts=3 cluster.address=auto": DRY,
    "python sweep.py models=[opus47,gpt55] problems=collectives": DRY,
    "python sweep.py model=reference problems.ids=[allreduce,allgather] eval.device=cpu": AS_WRITTEN,
    "python sweep.py model=reference problems=smoke eval.device=cpu attempts=2": DRY,
    "python sweep.py problems=all": DRY,
    "python sweep.py problems=representative": DRY,
    "python sweep.py model=openai_compatible model.api_base=http://127.0.0.1:8000/v1 model.model_id=NAME": DRY,
    "python sweep.py sweep.name=mine sweep.fresh=true": DRY,
    "python sweep.py --cfg job": AS_WRITTEN,
    "python3 sweep.py --dry-run models=all attempts=3 eval.device=cuda": AS_WRITTEN,
    "pkb sweep model=reference eval.device=cpu": DRY,
    "pkb problems list [--json]": "without --json (JSON is for programs)",
    "pkb problems check --world-size 2": "for allreduce alone (all 108 take minutes)",
    "pkb problems coverage": AS_WRITTEN,
    "pkb eval allreduce problems/allreduce/reference.py --no-guard": "on cpu",
    "pkb models list": AS_WRITTEN,
    "pkb prompt PROBLEM [--world-size N] [--device cpu|cuda]": "for allreduce (--raw prints it as sent, unfolded)",
    "pkb report SWEEP_NAME": "on the sweep above",
    "python sweep.py mode=agent turns=10 model=opus47": DRY,
    "python sweep.py mode=tools models=[opus47,gpt55] problems=all attempts=3": DRY,
    "python sweep.py mode=tools model=openai_compatible model.api_base=http://127.0.0.1:8000/v1  "
    "model.model_id=qwen3 mode.tools.tool_models=[openai_compatible]": DRY,
}
NOT_RUN = {
    "pkb ui": "a server (tests/tracking/test_ui.py drives it)",
    "pkb ui --uri sqlite:///mlflow.db --port 5000": "a server",
    "pkb ui --uri http://mlflow-host:5000": "a tracking server (tests/tracking/test_team_server.py runs one)",
    "python sweep.py models=all attempts=3 tracking.uri=http://mlflow-host:5000":
        "needs a tracking server and API keys (tests/tracking/test_team_server.py runs a sweep into one)",
    "pkb problems check --device cuda --world-size 2 --out DIR": "needs GPUs (scripts/audit_gpu.sh runs it there)",
    "pkb eval PROBLEM CANDIDATE.py [--world-size N] [--device cpu|cuda] [--json]": "the form of the run below",
    "pkb report SWEEP_NAME --wide": "every column, however wide: on purpose",
    "pkb report ZS AGENT TOOLS": "needs sweeps of three modes (tests/report/test_modes.py)",
    "pkb agent run allreduce model=opus47 eval.device=cuda": "needs an API key and GPUs",
}
ERRORS = ["python3 sweep.py atempts=3", "python3 sweep.py model=opus"]
"""What a typo prints, which the README describes in prose."""


def argv(command: str, how: str, sweep_name: str = "") -> list[str]:
    """The process a README command runs as (`how`: RUN's note)."""
    words = shlex.split(command)
    if words[0] == "pkb":
        words = [sys.executable, "-m", "pkb_ray.cli", *words[1:]]
    else:
        words = [sys.executable, str(REPO / "sweep.py"), *words[2:]]
    words = [w for w in words if w != "[--json]"]
    if how == DRY and "--dry-run" not in words:
        words.insert(4 if words[1] == "-m" else 2, "--dry-run")  # after `pkb sweep`, or sweep.py
    if "prompt" in words:
        words = words[:words.index("prompt") + 1] + ["allreduce"]
    if "check" in words:
        words += ["--ids", "allreduce"]
    if "eval" in words:
        words = [w if w != "problems/allreduce/reference.py" else str(REPO / w) for w in words] + ["--device", "cpu"]
    return [sweep_name if w == "SWEEP_NAME" else w for w in words]


def run(words: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("RAY_ADDRESS")}
    env.update(COLUMNS=str(WIDTH), PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def too_wide(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if len(line) > WIDTH]


def test_every_readme_command_is_run_or_says_why_not():
    assert set(COMMANDS) == set(RUN) | set(NOT_RUN), set(COMMANDS) ^ (set(RUN) | set(NOT_RUN))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


@pytest.fixture(scope="module")
def cpu_sweep(workdir):
    """The README's CPU sweep, run twice; (first run, second run, its sweep's name)."""
    command = "python sweep.py model=reference problems.ids=[allreduce,allgather] eval.device=cpu"
    first = run(argv(command, AS_WRITTEN), workdir)
    assert first.returncode in (0, 3), first.stderr  # 3: a cell deferred on a loaded machine
    second = run(argv(command, AS_WRITTEN), workdir)
    names = [p.name for p in (workdir / "sweeps").iterdir() if not p.name.startswith(".")]
    return first, second, names[0]


def test_a_real_sweep_fits_and_answers_nothing_to_run_the_second_time(cpu_sweep):
    first, second, name = cpu_sweep
    assert too_wide(first) == [], too_wide(first)
    if first.returncode == 0:
        assert f"sweep {name!r}: all 2 cells done; nothing to run" in second.stderr, second.stderr


CHECKED = [c for c in RUN if "sweep.py model=reference problems.ids" not in c] + ERRORS


@pytest.fixture(scope="module")
def outputs(workdir, cpu_sweep) -> dict[str, subprocess.CompletedProcess]:
    """Every other command's run, two at a time: none of them times anything, and each
    spends most of its 5-13 s importing (torch, litellm), which two cores halve."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = pool.map(lambda c: run(argv(c, RUN.get(c, AS_WRITTEN), sweep_name=cpu_sweep[2]), workdir), CHECKED)
        return dict(zip(CHECKED, procs))


@pytest.mark.parametrize("command", CHECKED)
def test_readme_command_fits_100_columns(command, outputs):
    proc = outputs[command]
    assert proc.returncode == (2 if command in ERRORS else 0), proc.stderr[-3000:]
    assert too_wide(proc) == [], too_wide(proc)
