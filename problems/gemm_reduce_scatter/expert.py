"""Expert candidate for `gemm_reduce_scatter`: rank r gets row chunk r of sum_k x_k @ w_k.

Symmetric memory + the shared NVRTC kernels, no NCCL. The GEMM writes the whole partial
product straight into this rank's symmetric slot (matmul out=, no copy-in), one barrier,
then pull_reduce reads row chunk r from every peer's slot over NVLink and sums it with our
own in fp32 (symm_compose.slot_reduce_scatter): each rank receives (W-1) chunks, the minimum.
PyTorch's torch.ops.symm_mem.fused_matmul_reduce_scatter also fits this problem (a test
fixture, tests/engine/fixtures/candidates/torch_symm/); this expert is the copy-free variant.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(x, w):
    m, n = x.shape[0], w.shape[1]
    sl = Slot("gemm_reduce_scatter", m * n * x.element_size(), x.device)
    torch.matmul(x, w, out=sl.local(x.dtype, (m, n)))
    return slot_reduce_scatter(sl, (m, n), x.dtype)
