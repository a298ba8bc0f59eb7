import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    u = torch.rand(size["rows_local"], size["cols"], generator=g, device=device)
    return (u.to(getattr(torch, size["dtype"])),)


def roofline(world_size, size):
    n = size["rows_local"] * size["cols"]
    return {
        # an interior rank sends two halo rows and receives two
        "nvlink_bytes_per_rank": 2.0 * size["cols"] * 4,
        # 3 adds and 1 multiply per point
        "flops_per_rank": 4.0 * n,
        # read u once, write out once
        "hbm_bytes_per_rank": 2.0 * n * 4,
    }
