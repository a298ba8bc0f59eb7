"""The ledger counts what a reference asks of the links and the GPU: every collective's
least traffic (comm.py's model), matmul FLOPs, and nothing for ops that only describe
tensors. Counted in real gloo rank processes, as the audit counts references."""

from __future__ import annotations

import pytest

from pkb_ray.selfcheck.audit import comm
from pkb_ray.selfcheck.launcher import run_ranks

from . import rank_targets as t

B = 16 * 8 * 4  # one 16x8 fp32 tensor


def test_traffic_model_per_collective():
    import torch

    x = torch.zeros(16, 8)
    assert comm.traffic("allreduce_", {"tensors": [x]}, 0, 4) == comm.Traffic(1.5 * B, 1.5 * B)
    assert comm.traffic("all_reduce", {"input": x}, 0, 2) == comm.Traffic(B, B)
    assert comm.traffic("_allgather_base_", {"output_tensor": torch.zeros(64, 8), "input_tensor": x}, 0, 4) \
        == comm.Traffic(3 * B, 3 * B)
    assert comm.traffic("_reduce_scatter_base_", {"output_tensor": torch.zeros(4, 8), "input_tensor": x}, 0, 4) \
        == comm.Traffic(3 * B / 4, 3 * B / 4)
    assert comm.traffic("reduce_scatter_tensor", {"input": x}, 0, 4) == comm.Traffic(3 * B / 4, 3 * B / 4)
    # uneven splits: rank 1 keeps 4 of its 16 rows and receives 12
    t2 = comm.traffic("alltoall_base_", {"input": x, "output": x, "input_split_sizes": [12, 4],
                                         "output_split_sizes": [12, 4]}, 1, 2)
    assert t2 == comm.Traffic(12 / 16 * B, 12 / 16 * B)
    assert comm.traffic("alltoall_base_", {"input": x, "output": x, "input_split_sizes": [],
                                           "output_split_sizes": []}, 0, 4) == comm.Traffic(0.75 * B, 0.75 * B)
    assert comm.traffic("gather_", {"input_tensors": [x], "root_rank": 0}, 0, 4) == comm.Traffic(0.0, 3 * B)
    assert comm.traffic("gather_", {"input_tensors": [x], "root_rank": 0}, 2, 4) == comm.Traffic(B, 0.0)
    assert comm.traffic("scatter_", {"output_tensors": [x], "root_rank": 1}, 1, 4) == comm.Traffic(3 * B, 0.0)
    assert comm.traffic("send", {"tensors": [x]}, 0, 2) == comm.Traffic(B, 0.0)
    assert comm.traffic("recv_", {"tensors": [x]}, 0, 2) == comm.Traffic(0.0, B)
    assert comm.traffic("barrier", {}, 0, 2) == comm.Traffic(0.0, 0.0)
    assert comm.traffic("allreduce_", {"tensors": [x]}, 0, 1) == comm.Traffic(0.0, 0.0)  # one rank moves nothing
    assert comm.traffic("some_new_collective", {"input": x}, 0, 2) is None


@pytest.mark.timeout(300)
def test_ledger_counts_every_collective_in_real_ranks():
    res = run_ranks(t.count_every_collective, 2, (t.free_port(),), timeout_s=240)
    assert res.ok, res.why()
    for rank, ledger in res.returned.items():
        assert ledger.unmodelled == (), ledger.unmodelled
        alltoall = 12 / 16 * B  # each rank keeps 4 rows and swaps 12
        p2p = B  # one tensor each way
        # all-reduce (torch.distributed's, then a functional one), all-gather, reduce-scatter
        each_way = B + B + B / 2 + alltoall + p2p + B
        assert ledger.sent_bytes == each_way and ledger.recv_bytes == each_way, (rank, ledger)
        assert ledger.matmul_flops == 2 * 16 * 8 * 8
        names = [c.split(":")[0] for c in ledger.collectives]
        assert names == ["allreduce_", "_allgather_base_", "_reduce_scatter_base_", "alltoall_base_", "send",
                         "recv_", "all_reduce"], names
        # the matmul reads 512 + 256 B and writes 512 B; copies and sums are counted too
        assert ledger.hbm_bytes >= 512 + 256 + 512
        assert ledger.pointwise_flops >= 16 * 8  # z + got


@pytest.mark.timeout(300)
def test_ledger_counts_a_subgroup_at_its_own_size():
    # a size-1 group's all-reduce moves nothing; counted as the world's it moved B per rank
    res = run_ranks(t.count_subgroup_collectives, 2, (t.free_port(),), timeout_s=240)
    assert res.ok, res.why()
    for rank, ledger in res.returned.items():
        assert ledger.sent_bytes == B and ledger.recv_bytes == B, (rank, ledger)
        assert [c.split(":")[0] for c in ledger.collectives] == ["allreduce_"]


@pytest.mark.timeout(300)
def test_ledger_counts_the_process_groups_a_call_makes():
    res = run_ranks(t.count_groups_made_per_call, 2, (t.free_port(),), timeout_s=240)
    assert res.ok, res.why()
    # each rank counts the groups it is in: the world's and its own (new_group of another
    # rank's singleton hands it a non-member marker)
    assert res.returned == {0: [2, 2, 0], 1: [2, 2, 0]}, res.returned


def test_ffts_count_n_log_n_and_views_count_nothing():
    import torch

    from pkb_ray.selfcheck.audit.ledger import count_call

    x = torch.randn(4, 1024)
    _, rfft = count_call(lambda t: torch.fft.rfft(t, dim=1), (x,), 0, 1)
    assert rfft.pointwise_flops == 2.5 * 4 * 1024 * 10 and rfft.sent_bytes == 0
    _, views = count_call(lambda t: t.view(1024, 4).t()[0], (x,), 0, 1)
    assert views.hbm_bytes == 0 and views.flops == 0
    _, add = count_call(lambda t: t + 1, (x,), 0, 1)
    assert add.pointwise_flops == 4 * 1024 and add.hbm_bytes == 2 * 4 * 1024 * 4
