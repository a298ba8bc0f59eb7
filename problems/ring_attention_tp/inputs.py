# pkb:include ../_shared/ring_attention/inputs.py

GRID = "tp_size"


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    tp, _ = _layout(world_size, size)
    tp_idx, cp_idx = rank % tp, rank // tp
    h, d = size["num_heads"], size["head_dim"]
    hidden = h * d
    heads = h // tp
    # the activations of a sequence block: shared by the TP ranks of that block
    ga = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 17 * cp_idx + 1)
    x = torch.randn(size["batch"], size["s_local"], hidden, generator=ga, device=device).to(dt)
    # this TP rank's column shard of W_qkv ([q heads; k heads; v heads]) and row shard of W_o:
    # shared by every sequence block
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 500_009 + 17 * tp_idx)
    w_qkv = torch.randn(3 * heads * d, hidden, generator=gw, device=device) / math.sqrt(hidden)
    w_qkv[:2 * heads * d] *= QK_GAIN
    w_qkv = w_qkv.to(dt)
    w_o = (torch.randn(hidden, heads * d, generator=gw, device=device) / math.sqrt(hidden)).to(dt)
    return x, w_qkv, w_o, h, tp, d ** -0.5, bool(size["causal"])


def roofline(world_size, size):
    tp, cp = _layout(world_size, size)
    b, s, h, d = size["batch"], size["s_local"], size["num_heads"], size["head_dim"]
    e = _BYTES[size["dtype"]]
    hidden, heads = h * d, h // tp
    block = b * s * heads * d * e
    # TP: all-reduce the [b, s, hidden] partial outputs (2 (tp-1)/tp of them per rank), unless
    # gathering the other ranks' weight shards is cheaper
    tp_bytes = min(2 * (tp - 1) / tp * b * s * hidden * e, (tp - 1) * 4 * hidden * heads * d * e)
    attn_blocks, kv_blocks = _ring_blocks(cp, size)
    return {
        # CP: queries must meet the earlier K/V blocks (or send Q and get partial outputs back):
        # one block per earlier block at least, (cp-1)/2 per rank when the work is balanced
        "nvlink_bytes_per_rank": kv_blocks * block + tp_bytes,
        "flops_per_rank": (2.0 * b * s * hidden * 3 * heads * d  # this rank's QKV columns
                           + 4.0 * b * heads * s * s * d * attn_blocks  # QK^T and PV
                           + 2.0 * b * s * heads * d * hidden),  # its share of the output projection
        # read activations and weight shards, write the output
        "hbm_bytes_per_rank": 2.0 * b * s * hidden * e + 4.0 * hidden * heads * d * e,
    }
