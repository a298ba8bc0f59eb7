import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    shape = (size["micro_tokens"], size["hidden"])
    act = torch.randn(shape, generator=g, device=device)
    grad = 1e-3 * torch.randn(shape, generator=g, device=device)
    return act.to(dt), grad.to(dt)


def roofline(world_size, size):
    b = size["micro_tokens"] * size["hidden"] * _BYTES[size["dtype"]]
    return {
        # send act and grad (to two different peers), receive two tensors
        "nvlink_bytes_per_rank": 2.0 * b,
        # no arithmetic
        "flops_per_rank": 0.0,
        # read two tensors, write two
        "hbm_bytes_per_rank": 4.0 * b,
    }
