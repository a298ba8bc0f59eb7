# GPU ONLY (problem allreduce). HACK: none; a kernel that writes through a wild pointer
# (an illegal address). The CUDA context of that rank is dead afterwards: a harness that
# evaluates candidates in its own long-lived process loses the GPU for every later
# candidate, and one that does not synchronize reports the error in the wrong place.
# EXPECTED: cuda_fault; the next candidate on the same node evaluates correctly.
import torch

_SRC = r"""
extern "C" __global__ void poke(int addr) {
  float* p = (float*)(unsigned long long)(unsigned)addr;  // 0x10: no allocation there
  p[threadIdx.x] = 1.0f;
}
"""
_K = []


def solution(x):
    if not _K:
        _K.append(torch.cuda._compile_kernel(_SRC, "poke"))
    _K[0](grid=(1, 1, 1), block=(32, 1, 1), args=[0x10])
    torch.cuda.synchronize()
    return x.clone()
