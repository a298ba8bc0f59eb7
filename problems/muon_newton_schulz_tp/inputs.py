import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

# Quintic Newton-Schulz coefficients, one (a, b, c) per step (published Muon schedule).
QUINTIC = [
    [4.0848, -6.8946, 2.9270],
    [3.9505, -6.3029, 2.6377],
    [3.7418, -5.5913, 2.3037],
    [2.8769, -3.1427, 1.2046],
    [2.8366, -3.0525, 1.2012],
]


def make_inputs(rank, world_size, seed, size, device="cpu"):
    rows, cols = size["rows"], size["cols"]
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # a momentum-like matrix: random with a few strong directions, so the singular values are
    # spread and the iteration has work to do
    x = torch.randn(rows, cols // world_size, generator=g, device=device)
    gs = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    u = torch.randn(rows, 4, generator=gs, device=device)
    v = torch.randn(4, cols // world_size, generator=g, device=device)
    x = x + 2.0 * (u @ v)
    return x.to(getattr(torch, size["dtype"])), [list(c) for c in QUINTIC], int(size["steps"]), 1


def roofline(world_size, size):
    r, cl, steps = size["rows"], size["cols"] // world_size, size["steps"]
    e = _BYTES[size["dtype"]]
    # per step: the local Gram part 2 r^2 cl, then (aI + bG + cG^2) X either as G@G (which the
    # ranks could split, 2 r^3 / w) plus a product with X (2 r^2 cl), or as G (G X) (4 r^2 cl)
    per_step = 2.0 * r * r * cl + min(2.0 * r ** 3 / world_size + 2.0 * r * r * cl, 4.0 * r * r * cl)
    return {
        # each step every rank needs the whole r x r Gram sum: at least r^2 fp32 values arrive
        "nvlink_bytes_per_rank": steps * r * r * 4.0,
        "flops_per_rank": steps * per_step,
        # read the shard, write the result
        "hbm_bytes_per_rank": 2.0 * r * cl * e,
    }
