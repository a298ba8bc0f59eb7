"""Expert candidate for `gemm_allreduce` (row-parallel linear): y = x @ w summed over ranks.

Symmetric memory + the shared NVRTC kernels, no NCCL. The GEMM writes its result straight
into this rank's symmetric slot (matmul out=), so the all-reduce needs no copy-in (64 MiB of
local traffic saved at bench size); then one barrier and the all-reduce of
symm_compose.slot_all_reduce: one-shot at W = 2 (each rank reads the peer's y over NVLink and
adds its own), two-shot from W = 3 (reduce my 1/W slice, barrier, pull the other slices).
Other dtypes (the fp32 small size) sum peer views with torch.
"""
# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(x, w):
    m, n = x.shape[0], w.shape[1]
    sl = allreduce_slot("gemm_allreduce", m * n, x.dtype, x.device)
    torch.matmul(x, w, out=sl.local(x.dtype, (m, n)))
    return slot_all_reduce(sl, (m, n), x.dtype)
