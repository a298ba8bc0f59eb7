"""GPU groups: disjoint groups chosen by topology, first come first served across world
sizes, co-tenancy counted, exclusive mode one at a time (real threads, no Ray)."""

from __future__ import annotations

import threading
import time

import pytest

from pkb_ray.engine.node import gpu_groups as gg

# `nvidia-smi topo -m` of an NVSwitch node (every pair NV18), cut to the columns we read.
DGX = """\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tCPU Affinity\tNUMA Affinity\x1b[0m
GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX\t0-55\t0
GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\t0-55\t0
GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\t0-55\t0
GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tSYS\t0-55\t0
GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\t56-111\t1
GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\t56-111\t1
GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\t56-111\t1
GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\t56-111\t1

Legend:
  X    = Self
"""

# A PCIe box whose NVLink bridges pair GPU0-GPU2 and GPU1-GPU3; the rest cross the sockets.
BRIDGED = """\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity
GPU0\t X \tSYS\tNV4\tPHB\t0-15
GPU1\tSYS\t X \tSYS\tNV4\t16-31
GPU2\tNV4\tSYS\t X \tSYS\t0-15
GPU3\tPHB\tNV4\tSYS\t X \t16-31
"""


def test_nvswitch_node_packs_groups_by_index():
    topo = gg.parse_topo_matrix(DGX, list(range(8)))
    assert topo.source == "nvidia-smi" and topo.link((0, 5)) == "NV18"
    groups = gg.GpuGroups(list(range(8)), topo)
    leases = [groups.acquire(2) for _ in range(4)]
    assert [lease.gpus for lease in leases] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert {lease.link for lease in leases} == {"NV18"}


def test_groups_follow_the_nvlink_bridges():
    topo = gg.parse_topo_matrix(BRIDGED, [0, 1, 2, 3])
    groups = gg.GpuGroups([0, 1, 2, 3], topo)
    first, second = groups.acquire(2), groups.acquire(2)
    assert (first.gpus, first.link) == ((0, 2), "NV4")
    assert (second.gpus, second.link) == ((1, 3), "NV4")
    groups.release(first)
    groups.release(second)
    whole = groups.acquire(4)
    assert whole.gpus == (0, 1, 2, 3) and whole.link == "SYS"  # the weakest link inside is named


def test_unreadable_topology_is_uniform():
    topo = gg.parse_topo_matrix("nvidia-smi: command not found", [0, 1])
    assert topo.source == "uniform" and topo.link((0, 1)) == "uniform"


def _acquire_in_thread(groups, n, out, name):
    def run():
        out[name] = groups.acquire(n)
        out[f"{name}_at"] = time.monotonic()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_full_node_makes_the_next_request_wait_and_counts_co_tenancy():
    groups = gg.GpuGroups(list(range(8)))
    leases = [groups.acquire(2) for _ in range(4)]
    assert [lease.co_tenancy for lease in leases] == [3, 3, 3, 3]
    assert groups.slots(2) == 4
    out: dict = {}
    t = _acquire_in_thread(groups, 2, out, "fifth")
    time.sleep(0.3)
    assert "fifth" not in out, "a fifth group of 2 was lent on an 8-GPU node"
    groups.release(leases[1])
    t.join(5)
    assert out["fifth"].gpus == (2, 3) and out["fifth"].co_tenancy == 3


def test_mixed_world_sizes_pack_without_starving_the_larger():
    """Six of 8 GPUs held by three 2-GPU evaluations; a 4-GPU request arrives, then a 2-GPU
    one. The two free GPUs go to neither: the 4-GPU request is first in line and the later
    one may not overtake it. When one 2-GPU evaluation ends, 4 are free: the larger gets them."""
    groups = gg.GpuGroups(list(range(8)))
    held = [groups.acquire(2) for _ in range(3)]
    out: dict = {}
    big = _acquire_in_thread(groups, 4, out, "big")
    time.sleep(0.2)
    small = _acquire_in_thread(groups, 2, out, "small")
    time.sleep(0.3)
    assert "big" not in out and "small" not in out
    groups.release(held[0])
    big.join(5)
    assert out["big"].gpus == (0, 1, 6, 7)
    time.sleep(0.2)
    assert "small" not in out, "no group of 2 is free while the 4-GPU evaluation runs beside two others"
    groups.release(held[1])
    small.join(5)
    assert out["small_at"] >= out["big_at"]
    in_use = [set(lease.gpus) for lease in (held[2], out["big"], out["small"])]
    assert sum(len(s) for s in in_use) == len(set().union(*in_use)) == 8, in_use


def test_exclusive_lends_one_group_at_a_time():
    groups = gg.GpuGroups(list(range(8)), exclusive=True)
    assert groups.slots(2) == 1
    first = groups.acquire(2)
    out: dict = {}
    t = _acquire_in_thread(groups, 2, out, "second")
    time.sleep(0.3)
    assert "second" not in out
    groups.release(first)
    t.join(5)
    assert first.co_tenancy == 0 and out["second"].co_tenancy == 0
    assert first.sharing == out["second"].sharing == "exclusive"


def test_a_cpu_node_lends_one_empty_group():
    groups = gg.GpuGroups([])
    lease = groups.acquire(2)
    assert lease.gpus == () and groups.slots(2) == 1
    with pytest.raises(TimeoutError):
        groups.acquire(2, timeout_s=0.2)
    groups.release(lease)
    groups.release(groups.acquire(2, timeout_s=1))


def test_a_request_larger_than_the_node_gets_the_whole_node():
    """The evaluation then says it cannot run (engine/node/evaluation.py names the shortfall)."""
    groups = gg.GpuGroups([0, 1])
    assert groups.acquire(4).gpus == (0, 1)
