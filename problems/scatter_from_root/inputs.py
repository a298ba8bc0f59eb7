import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    src = seed % world_size
    shape = [size["rows"], size["cols"]]
    if rank != src:
        return None, src, shape, size["dtype"], str(device)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    chunks = torch.randn(world_size, *shape, generator=g, device=device)
    return chunks.to(getattr(torch, size["dtype"])), src, shape, size["dtype"], str(device)


def roofline(world_size, size):
    b = size["rows"] * size["cols"] * _BYTES[size["dtype"]]
    return {
        # src sends every other rank its chunk
        "nvlink_bytes_per_rank": (world_size - 1) * b,
        "flops_per_rank": 0.0,
        # src reads all chunks and writes its own output
        "hbm_bytes_per_rank": (world_size + 1) * b,
    }
