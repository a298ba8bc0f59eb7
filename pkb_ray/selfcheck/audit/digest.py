"""Input digests: each input tensor summarised on its own device, so the parent can tell
whether inputs change with the seed and differ between ranks without moving them.

Equal tensors give equal digests (the same reductions over the same elements in the same
order). Different tensors give different ones unless their sums, sums of squares,
index-weighted sums and 64 sampled elements all agree, which random inputs never do.
"""

from __future__ import annotations

from typing import Any

import torch

from pkb_ray.problems import args as tree
from pkb_ray.selfcheck.audit.records import TensorDigest

SAMPLES = 64
CHUNK = 1 << 24
"""Elements reduced at a time: bounds the float64 temporaries to 128 MiB on bench inputs."""


def digest_tensor(path: str, t: torch.Tensor) -> TensorDigest:
    flat = t.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    n = flat.numel()
    total = squares = weighted = 0.0
    low, high = float("inf"), float("-inf")
    for lo in range(0, n, CHUNK):
        # float64 first: comparisons and sums are not implemented for every dtype (fp8) on GPUs
        part = flat[lo:lo + CHUNK].to(torch.float64)
        weights = torch.arange(lo, lo + part.numel(), device=part.device, dtype=torch.float64) % 65521 + 1
        total += float(part.sum())
        squares += float((part * part).sum())
        weighted += float((part * weights).sum())
        low, high = min(low, float(part.min())), max(high, float(part.max()))
    step = max(1, n // SAMPLES)
    sample = flat[::step][:SAMPLES]
    # a constant fill as args.is_constant sees it: more than one element, all equal, not a mask
    constant = n > 1 and t.dtype != torch.bool and t.layout == torch.strided and low == high
    return TensorDigest(path, tuple(t.shape), str(t.dtype).replace("torch.", ""), constant,
                        (total, squares, weighted, *sample.to(torch.float64).cpu().tolist()))


def digest_inputs(inputs: Any) -> tuple[TensorDigest, ...]:
    """A digest of every dense tensor among the inputs (module parameters included)."""
    return tuple(digest_tensor(p, t) for p, t in tree.tensors(inputs) if t.layout == torch.strided)


def _varied(d: TensorDigest) -> bool:
    return d.dtype != "bool" and len(d.shape) > 0 and all(s > 0 for s in d.shape) \
        and not (len(d.shape) == 1 and d.shape[0] == 1)


def compare_digests(by_rank: list[tuple[tuple[TensorDigest, ...], ...]]) -> dict[str, Any]:
    """What the digests of every rank (each: seed A's, seed B's) say about the inputs:
    `constant` tensors (path: ranks), `same_across_seeds` (every rank alike under two seeds),
    `same_across_ranks` (every rank holds the same tensor), and whether every varied
    tensor is the same on every rank (`identical_ranks`) or under both seeds on every
    rank (`identical_seeds`)."""
    world = len(by_rank)
    a = [d[0] if d else () for d in by_rank]
    b = [d[1] if len(d) > 1 else () for d in by_rank]
    constant: dict[str, list[int]] = {}
    for r, ds in enumerate(a):
        for d in ds:
            if d.constant:
                constant.setdefault(d.path, []).append(r)
    paths = [d.path for d in a[0]] if a else []
    varied = [d.path for d in a[0] if _varied(d)] if a else []
    aligned = all([d.path for d in ds] == paths for ds in a)

    def same_seeds(path: str) -> bool:
        return all(any(x.path == path for x in ds) and _get(ds, path) == _get(bs, path) for ds, bs in zip(a, b))

    def same_ranks(path: str) -> bool:
        first = _get(a[0], path)
        return all(_get(ds, path) == first for ds in a[1:])

    seeds_alike = [p for p in paths if all(len(bs) for bs in b) and same_seeds(p)]
    ranks_alike = [p for p in paths if world > 1 and aligned and same_ranks(p)]
    return {
        "tensors": len(paths),
        "constant": constant,
        "same_across_seeds": seeds_alike,
        "same_across_ranks": ranks_alike,
        "identical_seeds": bool(varied) and all(p in seeds_alike for p in varied),
        "identical_ranks": world > 1 and bool(varied) and all(p in ranks_alike for p in varied),
    }


def _get(ds: tuple[TensorDigest, ...], path: str) -> tuple | None:
    for d in ds:
        if d.path == path:
            return (d.shape, d.dtype, d.sums)
    return None
