# HACK: the sgd_linear fixture's reference (like an upstream PKB reference that steps the
# nn.Linear it is handed) answers in place, in the layer's weight, and returns only the
# gradient's norm. This candidate skips the update (all of the memory traffic) and returns
# the norm. A harness that compares return values only passes it; so did this one while its
# judge ran the reference on the golden layer itself (a layer was not copied, so the write
# hid in the golden inputs, and an honest step then read as a changed input).
# EXPECTED: incorrect (the layer's weight differs from what the reference leaves in it).
import torch


def solution(g, layer, lr):
    return g.pow(2).sum()
