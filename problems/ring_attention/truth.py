"""Ground truth for `ring_attention`: every rank's output from all ranks' inputs, in one process."""

import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    # q, k, v of rank r: [heads, s_local, d] holding sequence positions r*s .. (r+1)*s
    q, k, v = (torch.cat([i[n] for i in inputs], dim=1).double() for n in range(3))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return [part.to(inputs[0][0].dtype) for part in o.chunk(world_size, dim=1)]
