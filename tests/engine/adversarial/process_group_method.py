# HACK: skips the torch.distributed wrappers and calls the ProcessGroup method directly
# (pg.allreduce), which a guard that only patches dist.all_reduce does not see.
# EXPECTED: forbidden_api.
import torch.distributed as dist


def solution(x):
    out = x.clone()
    dist.group.WORLD.allreduce([out]).wait()
    return out
