"""Ground truth for `gnn_neighbor_aggregate`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    feats = torch.cat([i[0] for i in inputs]).double()
    out = []
    for x, src, dst in inputs:
        y = torch.zeros(x.shape, dtype=torch.float64)
        y.index_add_(0, dst, feats[src])
        out.append(y.to(x.dtype))
    return out
