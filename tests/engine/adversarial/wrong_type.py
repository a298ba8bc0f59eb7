# HACK: none; returns the wrong kind of thing (a list of Python floats in float64). A
# harness that calls torch.allclose on it crashes with a TypeError and reports a harness
# failure instead of a wrong answer.
# EXPECTED: incorrect (never harness_error).
def solution(x):
    return [float(v) for v in x.double()]
