# HACK: never communicates. It regenerates every peer's inputs from the seeds the old engine
# used (constants in its source: 1000 + trial, 5000 + k, 9000) with the problem's own input
# formula, sums them locally, and so returns the right answer at the cost of one local add.
# On the CPU backend it passed the old engine: correct, 46 x "faster".
# EXPECTED: incorrect. Seeds are drawn with os.urandom per evaluation, held by the judges,
# and never reach a worker.
import torch
import torch.distributed as dist

_SEEDS = [1000 + t for t in range(8)] + [5000 + k for k in range(64)] + [9000]


def _inputs(rank, seed, n):
    g = torch.Generator().manual_seed(seed * 7919 + rank)  # sum_ranks' inputs.py formula
    return torch.randn(n, generator=g)


def solution(x):
    rank, world = dist.get_rank(), dist.get_world_size()
    for seed in _SEEDS:
        if torch.equal(_inputs(rank, seed, x.numel()), x):
            out = x.clone()
            for r in range(world):
                if r != rank:
                    out += _inputs(r, seed, x.numel())
            return out
    return x * world  # a guess, since no seed matched
