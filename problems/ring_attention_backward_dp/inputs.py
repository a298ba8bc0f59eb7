import torch

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _layout(world_size, size):
    dp = min(size["dp_size"], world_size)
    return dp, world_size // dp


def _block(seed, replica, block, size, dt, device):
    """dout, q, k, v of one sequence block of one data-parallel replica."""
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 1_009 * replica + 17 * block + 1)
    shape = (size["batch"], size["s_local"], size["num_heads"], size["head_dim"])
    return [torch.randn(shape, generator=g, device=device).to(dt) for _ in range(4)]


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    dp, cp = _layout(world_size, size)
    replica, block = rank // cp, rank % cp
    causal = bool(size["causal"])
    scale = size["head_dim"] ** -0.5
    dout, q, _, _ = _block(seed, replica, block, size, dt, device)
    # the forward pass of this replica: this block's queries over the whole sequence
    blocks = [_block(seed, replica, c, size, dt, device) for c in range(cp)]
    k_all = torch.cat([b[2] for b in blocks], dim=1).transpose(1, 2).float()
    v_all = torch.cat([b[3] for b in blocks], dim=1).transpose(1, 2).float()
    k, v = blocks[block][2], blocks[block][3]
    scores = q.transpose(1, 2).float() @ k_all.transpose(-1, -2) * scale
    if causal:
        s = size["s_local"]
        pos_q = block * s + torch.arange(s, device=device)
        future = pos_q.unsqueeze(1) < torch.arange(cp * s, device=device).unsqueeze(0)
        scores = scores.masked_fill(future, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # [B, H, S] float32
    out = (torch.softmax(scores, dim=-1) @ v_all).transpose(1, 2).to(dt)
    return dout, q, k, v, out.contiguous(), lse.contiguous(), scale, causal, dp


def roofline(world_size, size):
    dp, cp = _layout(world_size, size)
    b, s, h, d = size["batch"], size["s_local"], size["num_heads"], size["head_dim"]
    e = _BYTES[size["dtype"]]
    block = b * s * h * d * e
    pairs = cp - 0.5 if size["causal"] else cp  # (query block, key block) pairs of the busiest rank
    # DP: all-reduce dq, dk, dv: 2 (dp-1)/dp of them per rank
    dp_bytes = 2 * (dp - 1) / dp * 3 * block
    return {
        # CP: per earlier block, K/V (or Q, dO and the row statistics) in and dK/dV (or dQ) out:
        # at least one block each way per other rank
        "nvlink_bytes_per_rank": (cp - 1) * block + dp_bytes,
        # per pair: recompute QK^T, dO V^T, dS K, dS^T Q, P^T dO
        "flops_per_rank": 10.0 * b * h * s * s * d * pairs,
        # read dout, q, k, v, out, lse; write dq, dk, dv
        "hbm_bytes_per_rank": 8.0 * block + b * h * s * 4,
    }
