"""Ground truth for `allgather_gemm`: every rank's output from all ranks' inputs, in one process."""

import torch


def expected(inputs, world_size):
    x = torch.cat([x for x, _ in inputs]).double()
    return [(x @ w.double()).to(w.dtype) for _, w in inputs]
