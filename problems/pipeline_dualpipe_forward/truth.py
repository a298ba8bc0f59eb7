"""Ground truth for `pipeline_dualpipe_forward`: both micro-batch streams through the whole
stage chain in one process, stage k's weights taken from rank k (and checked against the
copy on rank world_size-1-k)."""

import torch
import torch.nn.functional as F


def _model(x, stages, dt):
    y = x.double()
    for w in stages:
        wgu, wd = w["w_gate_up"].double(), w["w_down"].double()
        # rounded to dtype where the description says
        gate, up = (y @ wgu.T).to(dt).double().chunk(2, dim=-1)
        act = F.silu(gate).to(dt).double()
        prod = (act * up).to(dt).double()
        y = (y + (prod @ wd.T).to(dt).double()).to(dt).double()
    return y.to(dt)


def expected(inputs, world_size):
    """inputs[r] = (x_first, x_last, stage_own, stage_mirror, num_microbatches, micro_tokens)."""
    last = world_size - 1
    stages = [inputs[k][2] for k in range(world_size)]
    for k in range(world_size):  # the mirror copy of stage k sits on rank last - k
        for name, w in stages[k].items():
            assert torch.equal(inputs[last - k][3][name], w), (k, name)
    x_first, x_last = inputs[0][0], inputs[last][1]
    out = [None] * world_size
    out[last] = _model(x_first, stages, x_first.dtype)
    out[0] = _model(x_last, stages, x_last.dtype)
    return out
