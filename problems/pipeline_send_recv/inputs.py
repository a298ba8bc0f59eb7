import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    act = torch.randn(size["micro_tokens"], size["hidden"], generator=g, device=device)
    return (act.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    b = size["micro_tokens"] * size["hidden"] * _BYTES[size["dtype"]]
    return {
        # send one activation, receive one (concurrently, on different links)
        "nvlink_bytes_per_rank": float(b),
        # no arithmetic
        "flops_per_rank": 0.0,
        # read the outgoing activation, write the incoming one
        "hbm_bytes_per_rank": 2.0 * b,
    }
