"""The bound attacks (adversarial/fork_storm.py, fork_bomb.py, memory_hog.py,
reclones_spinner.py) on GPUs at world size 2, each around the symmetric-memory peer sum
instead of the CPU store exchange. Skipped where fewer than 2 GPUs.

    python -m pytest tests/engine/test_gpu_bounds.py -m gpu -s -q
"""

from __future__ import annotations

import os
import pwd
import time

import pytest

from pkb_ray.records import FailureClass

from . import test_gpu
from tests.helpers import figures_or_skip

F = FailureClass
CPU_HONEST = "# pkb:include ../fixtures/candidates/store_exchange.py"
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(test_gpu._gpu_count() < 2, reason="needs 2 CUDA GPUs (run on the device)")]


def _source(name: str) -> str:
    text = (test_gpu.ADVERSARIAL / f"{name}.py").read_text()
    assert CPU_HONEST in text
    return text.replace(CPU_HONEST, (test_gpu.GPU_ADV / "honest_peer_sum.py").read_text())


def _held(feature: str) -> bool:
    from pkb_ray.engine.launch import bounds

    return bounds.run_group().group.has(feature)


@pytest.mark.parametrize("name, bound, env", [
    ("fork_storm", "pids.max", {}),
    ("fork_bomb", "pids.max", {"PKB_SANDBOX_PIDS": "1024"}),
    ("memory_hog", "memory", {"PKB_SANDBOX_MEMORY_MB": "8192"}),
    ("reclones_spinner", "", {}),
])
def test_bound_attacks_at_world_size_2(name, bound, env, cache_dir, monkeypatch):
    from pkb_ray.engine import evaluate

    feature = {"pids.max": "pids", "memory": "memory"}.get(bound)
    if feature and not _held(feature):
        pytest.skip(f"no cgroup holds {feature} on this node (the result's sandbox field says what held)")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = _sandbox_processes()
    res = evaluate(test_gpu._req(_source(name), cache_dir))
    test_gpu._report(name, res)
    if bound:
        assert res.failure == F.RESOURCE_LIMIT and bound in res.message, (res.failure, res.message, res.log[-3000:])
    else:
        assert res.correct, (res.failure, res.message, res.log[-3000:])
    for k in env:
        monkeypatch.delenv(k)
    after = test_gpu._run("honest_peer_sum", cache_dir)
    assert after.correct and after.speedup, (after.failure, after.message)
    if not bound:  # scored: its spinner bought it nothing beyond the honest exchange's interval
        figures_or_skip(res, after)
        assert res.speedup <= after.speedup_ci_high, (res.speedup, after.speedup_ci_high)
    deadline = time.monotonic() + 10
    while len(_sandbox_processes()) > len(before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_sandbox_processes()) <= len(before), _sandbox_processes()


def _sandbox_processes() -> list[str]:
    """Processes of the sandbox's user outside the sandboxes the node keeps started ahead
    of their candidates (none where candidates run as this user: then the cgroup tests on
    CPU stand for this check). Where this process has a run group, only the processes in it
    count: every sandbox this process starts lies under it and no process of a sandbox can
    leave it, while the GPU suite's other xdist worker (scripts/device/pytest_gpu.sh) runs
    sandboxes of its own as the same user at the same time."""
    from pkb_ray.engine.judge.freezer import children
    from pkb_ray.engine.launch import bounds
    from pkb_ray.engine.node.evaluation import LOCAL

    try:
        uid = pwd.getpwnam("pkb-sandbox").pw_uid
    except KeyError:
        return []
    group = bounds.run_group().group
    ours = group.pids() if group.paths else None
    ahead = [sb.proc.popen.pid for node in LOCAL.nodes() for sb in node.sandboxes_ahead()]
    kept: set[int] = set()
    while ahead:
        pid = ahead.pop()
        if pid not in kept:
            kept.add(pid)
            ahead.extend(children(pid))
    found = []
    for pid in os.listdir("/proc"):
        try:
            if (pid.isdigit() and int(pid) not in kept and os.stat(f"/proc/{pid}").st_uid == uid
                    and (ours is None or int(pid) in ours)):
                found.append(pid)
        except OSError:
            pass
    return found
