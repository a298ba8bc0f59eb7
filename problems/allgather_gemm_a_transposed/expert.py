"""Expert candidate for `allgather_gemm_a_transposed`: all-gather the K-major blocks of A^T
along dim 0, then C = (B^T @ A^T)^T on every rank.

Symmetric memory + the shared NVRTC kernels, no NCCL. The blocks are contiguous row chunks
of A^T [k, m], so the all-gather is the allgather expert's (symm_compose.all_gather_rows: one
local pass into the own slot and output chunk, one barrier, one pull kernel reading the
peers' blocks over NVLink straight into place), then the reference's single GEMM.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(a_t_local, b):
    a_t = all_gather_rows("allgather_gemm_a_transposed", a_t_local)
    return (b.t() @ a_t).t()
