import torch


def make_inputs(rank, world_size, seed, size, device="cpu"):
    n, bs = size["numel"], size["block_size"]
    nb = -(-n // bs)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    # per-block power-of-two scale s = 2^k (k in -14..-4: gradients from ~1e-4 to ~8)
    s = torch.pow(2.0, torch.randint(-14, -3, (nb, 1), generator=g, device=device).float())
    q = (40.0 * torch.randn(nb, bs, generator=g, device=device)).round().clamp(-126, 126)
    f = torch.randint(-7, 8, (nb, bs), generator=g, device=device).float() / 16
    # one element per block (inside the real, unpadded range) is exactly +-127 s
    valid = torch.full((nb,), bs, device=device)
    valid[-1] = n - (nb - 1) * bs
    pos = (torch.rand(nb, generator=g, device=device) * valid).long()
    sign = torch.randint(0, 2, (nb,), generator=g, device=device).float() * 2 - 1
    rows = torch.arange(nb, device=device)
    q[rows, pos] = 127.0 * sign
    f[rows, pos] = 0.0
    x = ((q + f) * s).reshape(-1)[:n].contiguous()
    return x.to(getattr(torch, size["dtype"])), bs


def roofline(world_size, size):
    n, bs = size["numel"], size["block_size"]
    w = world_size
    codes = n + -(-n // bs) * 4  # int8 codes plus one fp32 scale per block
    # The sum is exact float32, not an int8 code, so it cannot travel as one: either every
    # rank gets every peer's codes and sums them itself, or a reduce-scatter of codes is
    # followed by an all-gather of the float32 sums. The cheaper (the first below world 8).
    gather_codes = (w - 1) * codes
    reduce_then_gather = (w - 1) / w * (codes + 4 * n)
    return {
        "nvlink_bytes_per_rank": min(gather_codes, reduce_then_gather),
        # absmax, divide, round, dequantize, add, scale: ~6 per element
        "flops_per_rank": 6.0 * n,
        # read the float32 gradient once, write the float32 result once
        "hbm_bytes_per_rank": 8.0 * n,
    }
