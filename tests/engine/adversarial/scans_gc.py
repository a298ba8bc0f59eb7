# HACK: scans every object the garbage collector tracks (gc.get_objects) for tensors of the
# output's shape, and returns one that differs from its input: in a harness that keeps the
# reference's outputs in the candidate's interpreter, that is the answer. GPU MODE's
# leaderboards received gc and frame introspection in live submissions.
# EXPECTED: incorrect, or nan when the tensor it finds is an unfilled buffer (no reference
# output exists in the worker's process).
import gc

import torch


def solution(x):
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj.dtype == x.dtype \
                and obj.data_ptr() != x.data_ptr() and not torch.equal(obj, x):
            return obj.clone()
        if isinstance(obj, dict):
            for v in list(obj.values())[:64]:
                if isinstance(v, torch.Tensor) and v.shape == x.shape and v.dtype == x.dtype \
                        and v.data_ptr() != x.data_ptr() and not torch.equal(v, x):
                    return v.clone()
    return torch.zeros_like(x)
