import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    rows, hidden = size["rows"], size["hidden"]
    x = torch.randn(rows, hidden, generator=g, device=device)
    x_hat = x / x.norm(dim=-1, keepdim=True)
    dy = torch.randn(rows, hidden, generator=g, device=device)
    dt = getattr(torch, size["dtype"])
    return x_hat.to(dt), dy.to(dt)


def roofline(world_size, size):
    rows, hidden = size["rows"], size["hidden"]
    e = _BYTES[size["dtype"]]
    return {
        # all-reduce of 2 * hidden fp32 sums: 2 (w-1)/w of them in and out
        "nvlink_bytes_per_rank": 2 * (world_size - 1) / world_size * 2 * hidden * 4,
        # a multiply and two adds per element
        "flops_per_rank": 3.0 * rows * hidden,
        # read x_hat and dy once, write the two fp32 vectors
        "hbm_bytes_per_rank": 2.0 * rows * hidden * e + 2 * hidden * 4,
    }
