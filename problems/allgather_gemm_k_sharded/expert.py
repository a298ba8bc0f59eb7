"""Expert candidate for `allgather_gemm_k_sharded`: A = cat(a_local over ranks, dim 1); A @ B.

Symmetric memory, no NCCL. Each rank writes its column block into its symmetric slot, one
barrier, then copies every rank's block (its own locally, the peers' over NVLink through
peer views) straight into its column range of A [m, k]: the reference's separate
torch.cat pass disappears. Then the reference's single GEMM (same accumulation as NCCL's
path, fp32 over the whole k).
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(a_local, b):
    a_local = a_local.contiguous()
    m, kl = a_local.shape
    sl = Slot("allgather_gemm_k_sharded", a_local.numel() * a_local.element_size(), a_local.device)
    W, r = sl.world, sl.rank
    sl.local(a_local.dtype, (m, kl)).copy_(a_local)
    a = torch.empty((m, W * kl), dtype=a_local.dtype, device=a_local.device)
    a[:, r * kl:(r + 1) * kl].copy_(a_local)
    sl.barrier()
    for step in range(1, W):
        j = (r + step) % W
        a[:, j * kl:(j + 1) * kl].copy_(sl.peer(j, a_local.dtype, (m, kl)))
    return a @ b
