# HACK: returns an object that only looks like a tensor and computes nothing until someone
# reads it; a harness that times the call and then inspects the result outside the timed
# region does the work for it (lazily computed results, pygpubench's exploit list).
# EXPECTED: incorrect (only plain tensors cross the boundary: anything else is a value of a
# type the judge cannot check).
import torch


class Later:
    def __init__(self, x):
        self.x = x
        self.shape, self.dtype, self.device = x.shape, x.dtype, x.device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*[self.x * 2 if a is self else a for a in args], **(kwargs or {}))


def solution(x):
    return Later(x)
