# GPU ONLY (problem allreduce). HACK: the same NCCL all-reduce through the functional
# collectives (torch.ops._c10d_functional), which a guard that only patches
# torch.distributed.all_reduce does not see.
# EXPECTED: forbidden_api.
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol


def solution(x):
    return funcol.all_reduce(x, "sum", dist.group.WORLD).wait()
