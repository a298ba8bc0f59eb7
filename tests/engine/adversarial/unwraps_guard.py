# HACK: the Python guard replaces torch.distributed's collectives with wrappers that keep the
# originals in closures; this reads the original all_reduce out of the wrapper's closure
# cells and calls it directly, so no guard function ever runs.
# EXPECTED: forbidden_api (the guard also wraps the ProcessGroup's own methods, which the
# original all_reduce calls); and past every wrapper the worker's process group cannot
# communicate anyway: NCCL-free by construction, the guard is a second layer.
import torch.distributed as dist


def _original(fn):
    for cell in getattr(fn, "__closure__", None) or ():
        v = cell.cell_contents
        if callable(v) and getattr(v, "__name__", "") == "all_reduce":
            return v
    return fn


def solution(x):
    out = x.clone()
    _original(dist.all_reduce)(out)
    return out
