import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    b, c, n, gd = size["batch"], size["channels"], size["local_seq"], size["group_dim"]
    length = world_size * n
    groups = c // gd
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + rank)
    x1, x2, v = (torch.randn(b, c, n, generator=g, device=device) for _ in range(3))
    # replicated long filters: Hyena's implicit filters are decaying, modulated sequences;
    # decay lengths from a few samples to half the sequence, unit l2 norm per filter
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    tau = 4.0 + torch.rand(groups, 1, generator=gw, device=device) * (length / 2)
    pos = torch.arange(length, device=device, dtype=torch.float32)
    h = torch.randn(groups, length, generator=gw, device=device) * torch.exp(-pos / tau)
    h = h / h.norm(dim=1, keepdim=True)
    bias = torch.randn(c, generator=gw, device=device)
    return (x1.to(dt), x2.to(dt), v.to(dt), h.to(dt), bias.to(dt), groups, gd,
            bool(size["zigzag"]))


def roofline(world_size, size):
    e = _BYTES[size["dtype"]]
    b, c, n, gd = size["batch"], size["channels"], size["local_seq"], size["group_dim"]
    w = world_size
    cl, length = c // w, w * n
    fft_n = 2 * length
    return {
        # the reference's channel-parallel layout moves 4 * (w-1)/w of a local tensor (x1, x2, v
        # in, the output back); sending partial convolutions of earlier positions instead can
        # move less, but never less than (w-1)/w of one local tensor
        "nvlink_bytes_per_rank": 1.0 * b * cl * (w - 1) * n * e,
        # at least one real FFT of 2L points per local channel (~2.5 N log2 N flops)
        "flops_per_rank": b * cl * 2.5 * fft_n * fft_n.bit_length(),
        # read x1, x2, v and this rank's filters, write the output
        "hbm_bytes_per_rank": (4.0 * b * c * n + (cl // gd + 1) * length) * e,
    }
