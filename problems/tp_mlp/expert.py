"""Expert candidate for `tp_mlp`: y = gelu_tanh(x @ w1) @ w2 summed over ranks (Megatron MLP).

Symmetric memory + the shared NVRTC kernels, no NCCL. The second GEMM writes straight into
this rank's symmetric slot (matmul out=), so the all-reduce needs no copy-in; then
symm_compose.slot_all_reduce (one-shot at W = 2, two-shot from W = 3). Same composition as
the gemm_allreduce expert.
"""
import torch.nn.functional as F

# pkb:include ../_shared/symm_collectives.py
# pkb:include ../_shared/symm_compose.py


def solution(x, w1, w2):
    m, n = x.shape[0], w2.shape[1]
    h = F.gelu(x @ w1, approximate="tanh")
    sl = allreduce_slot("tp_mlp", m * n, x.dtype, x.device)
    torch.matmul(h, w2, out=sl.local(x.dtype, (m, n)))
    return slot_all_reduce(sl, (m, n), x.dtype)
