# HACK: walks the Python call stack above `solution` and looks through every frame's local
# variables for a tensor of the output's shape that is not its own input: the harness's
# expected output. Measured against the old engine (candidate in the interpreter holding the
# reference outputs): reported correct at 4.6e-05 ms, 3816 x faster than NVLink allows.
# EXPECTED: incorrect. The worker's frames hold no expected output: the judge keeps those in
# another process; what the worker's stack holds is this call's inputs and output slots.
import sys

import torch


def _candidates(x):
    f = sys._getframe(1)
    seen = set()
    while f is not None:
        for v in list(f.f_locals.values()):
            for t in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(t, torch.Tensor) and t.shape == x.shape and t.dtype == x.dtype \
                        and t.data_ptr() != x.data_ptr() and id(t) not in seen:
                    seen.add(id(t))
                    yield t
        f = f.f_back


def solution(x):
    for t in _candidates(x):
        if not torch.equal(t, x):
            return t.clone()  # an expected output would be the only such tensor
    return x.clone()
