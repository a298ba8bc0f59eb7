import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x = torch.randn(size["rows"], size["cols"], generator=g, device=device)
    # the destination is an argument and moves with the seed: a candidate may not assume 0
    return x.to(getattr(torch, size["dtype"])), seed % world_size


def roofline(world_size, size):
    n = size["rows"] * size["cols"]
    b = n * _BYTES[size["dtype"]]
    return {
        # every output element needs data from the other ranks: dst receives at least the
        # full tensor once (a chain or tree of partial sums), and no rank need move more
        "nvlink_bytes_per_rank": b,
        # the (w-1) n additions spread over all ranks
        "flops_per_rank": (world_size - 1) / world_size * n,
        # dst reads x and writes the result
        "hbm_bytes_per_rank": 2 * b,
    }
