"""Test tiers and quarantine, for every pytest run of this suite.

Tiers: tests marked `slow` (Ray clusters, every problem at world sizes 1/2/4, real sweeps)
run after all the others, so a run reports the fast tier's failures within minutes; the
summary gives each tier's count and wall time. One session, not two invocations: one exit
status, one failure summary, session fixtures built once, and `-x`, `-k` or a path narrow
both tiers alike (`-m "not slow"` runs the fast tier alone).

Quarantine: a test marked `quarantine(reason)` still runs, and its result is reported; an
AssertionError in it is reported as xfailed with the reason instead of failing the suite.
Any other exception still fails it. Quarantine a test only for a nondeterminism that lies
in the code under test and that the reason names; fix everything else.

GPU groups: with PKB_TEST_GPU_GROUPS="0,1;2,3" and pytest-xdist's `-n 2`, each worker sees
its own GPUs (worker k takes group k as its CUDA_VISIBLE_DEVICES), so the GPU suite runs
on a node's GPU pairs side by side (scripts/device/pytest_gpu.sh) as a sweep's GPU groups
do. Without xdist, or without the variable, nothing changes.
"""

from __future__ import annotations

import os
import time

import pytest

SLOW = "slow"


def _pin_worker_gpus() -> None:
    groups = [g.strip() for g in os.environ.get("PKB_TEST_GPU_GROUPS", "").split(";") if g.strip()]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...
    if not groups or not worker.startswith("gw"):
        return
    k = int(worker[2:])
    if k >= len(groups):
        raise pytest.UsageError(f"xdist worker {worker} has no GPU group: PKB_TEST_GPU_GROUPS names "
                                f"{len(groups)} ({os.environ['PKB_TEST_GPU_GROUPS']!r}); run -n {len(groups)}")
    # before any test module counts or opens a GPU: the engine reads it as this process's GPUs
    os.environ["CUDA_VISIBLE_DEVICES"] = groups[k]


def pytest_configure(config: pytest.Config) -> None:
    _pin_worker_gpus()
    config._pkb_tiers = {"fast": [0, None, None], "slow": [0, None, None]}  # count, start, end


def _tier(item: pytest.Item) -> str:
    return SLOW if item.get_closest_marker(SLOW) is not None else "fast"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _tier(item) == SLOW)  # stable: file order within a tier
    for item in items:
        mark = item.get_closest_marker("quarantine")
        if mark is not None:
            reason = mark.args[0] if mark.args else mark.kwargs.get("reason", "")
            if not reason:
                raise pytest.UsageError(f"{item.nodeid}: quarantine needs a reason")
            item.add_marker(pytest.mark.xfail(reason=f"quarantined: {reason}", raises=AssertionError,
                                              strict=False))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    tier = item.config._pkb_tiers[_tier(item)]
    tier[0] += 1
    if tier[1] is None:
        tier[1] = time.monotonic()
    try:
        return (yield)
    finally:
        tier[2] = time.monotonic()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    parts = []
    for name, (count, start, end) in config._pkb_tiers.items():
        if count:
            parts.append(f"{name} tier: {count} tests in {end - start:.0f} s")
    if parts:
        terminalreporter.write_line("; ".join(parts))
