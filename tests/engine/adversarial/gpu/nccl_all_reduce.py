# GPU ONLY (problem allreduce). HACK: calls NCCL through torch.distributed on CUDA tensors:
# correct, and exactly as fast as the reference; upstream PKB accepted it as a "kernel".
# EXPECTED: forbidden_api.
import torch.distributed as dist


def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    return out
