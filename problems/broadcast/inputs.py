import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["rows"], size["cols"], generator=g, device=device)
    return (x.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    b = size["rows"] * size["cols"] * _BYTES[size["dtype"]]
    return {
        # every non-root rank receives the whole tensor; the root sends it (at least) once
        "nvlink_bytes_per_rank": float(b),
        # no arithmetic
        "flops_per_rank": 0.0,
        # read (root) or write (others) the tensor, plus the output copy on the root
        "hbm_bytes_per_rank": 2.0 * b,
    }
