# HACK: just calls the library collective (dist.all_reduce): correct, and as fast as the
# reference, but it is exactly what the benchmark asks to replace. Upstream PKB accepted it.
# EXPECTED: forbidden_api.
import torch.distributed as dist


def solution(x):
    out = x.clone()
    dist.all_reduce(out)
    return out
