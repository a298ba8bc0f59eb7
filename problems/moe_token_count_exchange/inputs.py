import torch


def routing(rank, world_size, seed, size, device):
    """Rank `rank`'s expert choices [tokens, topk]: topk distinct experts per token, drawn
    without replacement from a skewed popularity (Gumbel top-k on log-popularity; the
    popularity is seed-wide, the draws per rank)."""
    e, k, t = size["experts"], size["topk"], size["tokens"]
    gp = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 999_983)
    log_pop = torch.log_softmax(0.7 * torch.randn(e, generator=gp, device=device), dim=0)
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 7 * rank + 1)
    u = torch.rand(t, e, generator=g, device=device).clamp_(min=1e-20)
    return (log_pop - torch.log(-torch.log(u))).topk(k, dim=1).indices


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    chosen = routing(rank, world_size, seed, size, device)
    mask = torch.nn.functional.one_hot(chosen, size["experts"]).permute(2, 1, 0).to(dt).contiguous()
    return mask, size["experts"]


def roofline(world_size, size):
    e, k, t = size["experts"], size["topk"], size["tokens"]
    return {
        # receive the other ranks' per-expert counts (int32 suffices)
        "nvlink_bytes_per_rank": (world_size - 1) * e * 4,
        # one add per mask entry
        "flops_per_rank": float(e * k * t),
        # read the float32 mask once
        "hbm_bytes_per_rank": 4.0 * e * k * t,
    }
