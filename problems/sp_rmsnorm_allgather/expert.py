"""Expert candidate for `sp_rmsnorm_allgather`: RMSNorm of the local sequence shard, then
all-gather along the sequence.

Symmetric memory + the shared NVRTC kernels, no NCCL. The norm is the reference's torch
expression (bit-identical y); the all-gather is symm_compose.all_gather_rows (one local pass
into the own slot and output chunk, one barrier, one kernel pulling the peers' shards over
NVLink straight into the output).
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(x, weight):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.float()).to(x.dtype)
    return all_gather_rows("sp_rmsnorm_allgather", y)
