import random

import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _counts(world_size, seed, size):
    # Python's RNG, not torch's: shapes must be computable without tensor data (the memory
    # estimate builds inputs under FakeTensorMode)
    rng = random.Random(seed * 1_000_003 + 31_337)
    return [rng.randint(size["objects_min"], size["objects_max"]) for _ in range(world_size)]


def _bases(seed, size, device):
    """A few object shapes (filled ellipses), shared by all ranks: tracked objects that are
    copies of one shape overlap strongly, others hardly."""
    h, w, nb = size["height"], size["width"], size["shapes"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    cy, cx = torch.rand(nb, 1, 1, generator=g, device=device) * h, torch.rand(nb, 1, 1, generator=g, device=device) * w
    ry = (0.1 + 0.2 * torch.rand(nb, 1, 1, generator=g, device=device)) * h
    rx = (0.1 + 0.2 * torch.rand(nb, 1, 1, generator=g, device=device)) * w
    yy = torch.arange(h, device=device).view(1, h, 1)
    xx = torch.arange(w, device=device).view(1, 1, w)
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    counts = _counts(world_size, seed, size)
    bases = _bases(seed, size, device)
    n = counts[rank]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    shape_of = torch.randint(0, bases.shape[0], (n,), generator=g, device=device)
    # mask logits: +/- a per-object confidence around the shape, plus a shift of the whole
    # shape by a few pixels and pixel noise, so same-shape IoUs spread around the threshold
    conf = 1.0 + 3.0 * torch.rand(n, 1, 1, generator=g, device=device)
    sign = bases[shape_of].to(torch.float32) * 2 - 1
    rng = random.Random(seed * 1_000_003 + 7919 * rank + 3)
    shifts = [(rng.randint(-3, 3), rng.randint(-3, 3)) for _ in range(n)]
    sign = torch.stack([torch.roll(s, shift, dims=(0, 1)) for s, shift in zip(sign, shifts)]) if n else sign
    masks = sign * conf + torch.randn(n, size["height"], size["width"], generator=g, device=device)
    scores = torch.randn(n, generator=g, device=device)
    gl = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 4_242)
    last_occluded = torch.randint(-1, 6, (sum(counts),), generator=gl, device=device)
    return (masks.to(dt), scores.to(dt), counts, last_occluded, float(size["iou_threshold"]),
            bool(size["reverse"]))


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    hw = size["height"] * size["width"]
    n_min = size["objects_min"]
    total = world_size * n_min
    return {
        # every rank ends with all masks: the other ranks' masks must arrive (input precision)
        "nvlink_bytes_per_rank": float((world_size - 1) * n_min * (hw + 1) * e),
        # pairwise intersections of binary masks can be bit-packed AND + popcount, far below
        # any matmul rate: no flop bound is claimed
        "flops_per_rank": 0.0,
        # read the local masks, write the float32 global masks
        "hbm_bytes_per_rank": float(n_min * hw * e + total * hw * 4),
    }
