"""Ground truth for `pipeline_mlp_forward`: the stage chain applied in one process."""

import torch


def expected(inputs, world_size):
    """inputs[r] = (x or None, w1, w2, num_microbatches, micro_tokens)."""
    x = inputs[0][0]
    dt = x.dtype
    y = x.double()
    for w1, w2 in ((inputs[s][1].double(), inputs[s][2].double()) for s in range(world_size)):
        # rounded to dtype where the description says: the GEMM outputs, gelu, the sum
        a = (y @ w1.T).to(dt).double()
        hid = torch.nn.functional.gelu(a).to(dt).double()
        y = (y + (hid @ w2.T).to(dt).double()).to(dt).double()
    return [y.to(dt) if r == world_size - 1 else None for r in range(world_size)]
