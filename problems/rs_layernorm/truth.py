"""Ground truth for `rs_layernorm`: every rank's output from all ranks' inputs, in one process."""

import torch.nn.functional as F


def expected(inputs, world_size):
    total = sum(i[0].double() for i in inputs)
    out = []
    for r, (_, residual, weight, bias) in enumerate(inputs):
        h = total.chunk(world_size)[r] + residual.double()
        y = F.layer_norm(h, h.shape[-1:], weight.double(), bias.double(), 1e-5)
        out.append((y.to(residual.dtype), h.to(residual.dtype)))
    return out
