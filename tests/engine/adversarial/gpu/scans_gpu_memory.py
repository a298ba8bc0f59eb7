# GPU ONLY (problem allreduce). HACK: reads device memory around its own buffers (2 MiB steps
# each way, through the driver's cuMemcpyDtoH) and returns the first block that is neither
# its input, nor zeros, nor garbage: pygpubench keeps in its own exploit suite a candidate
# that finds the expected outputs this way, in the same CUDA context as the checker.
# EXPECTED: incorrect: the judge's expected outputs live in another process's context; all
# this worker can reach is its own memory and the arena (inputs and output slots).
import ctypes

import torch

_cu = ctypes.CDLL("libcuda.so.1")


def solution(x):
    n = x.numel() * x.element_size()
    host = (ctypes.c_byte * n)()
    mine = x.detach().cpu()
    for step in [s for k in range(1, 65) for s in (k, -k)]:
        ptr = x.data_ptr() + step * (2 << 20)
        if ptr <= 0 or _cu.cuMemcpyDtoH_v2(host, ctypes.c_uint64(ptr), ctypes.c_size_t(n)) != 0:
            continue
        t = torch.frombuffer(bytearray(host), dtype=x.dtype).view_as(x)
        if torch.isfinite(t).all() and t.abs().sum() > 0 and not torch.equal(t, mine) \
                and t.abs().max() < 1e4:
            return t.to(x.device)
    return torch.zeros_like(x)
