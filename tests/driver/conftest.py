import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def sweep_cmd(*overrides: str) -> list[str]:
    return [sys.executable, str(REPO / "sweep.py"), *overrides]


def scrubbed_env(**extra: str) -> dict[str, str]:
    # COLUMNS out too: messages wrap to it, and the tests look for phrases whole.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "MLFLOW_", "COLUMNS"))}
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


@pytest.fixture
def run_sweep_cli(tmp_path):
    """Run `python sweep.py ...` in a fresh working directory; returns CompletedProcess."""

    def run(*overrides: str, timeout: float = 600, check: bool = True):
        proc = subprocess.run(sweep_cmd(*overrides, "sweep.progress=false"), cwd=tmp_path,
                              env=scrubbed_env(), capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"sweep exited {proc.returncode}\nSTDOUT:\n{proc.stdout}\nSTDERR:\n{proc.stderr}")
        return proc

    return run


@pytest.fixture
def ray_head():
    """A real Ray cluster started here; sweeps join it with cluster.address and a killed
    driver leaves it running, as on a real cluster."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4})
    yield cluster
    cluster.shutdown()
