# pkb:include ../_shared/ring_attention/inputs.py

GRID = "pp_size"


def make_inputs(rank, world_size, seed, size, device="cpu"):
    dt = getattr(torch, size["dtype"])
    pp, cp = _layout(world_size, size)
    stage, block = rank // cp, rank % cp
    h, d = size["num_heads"], size["head_dim"]
    hidden = h * d
    shape = (size["batch"], size["s_local"], hidden)
    # stage 0: sequence block `block` of the model input; later stages: a buffer of the same
    # shape whose contents are not used (their input comes from the previous stage)
    ga = torch.Generator(device=device).manual_seed(seed * 1_000_003 + (17 * block + 1 if stage == 0 else 99_991 + rank))
    x = torch.randn(shape, generator=ga, device=device).to(dt)
    # this stage's attention weights: shared by every sequence block of the stage
    gw = torch.Generator(device=device).manual_seed(seed * 1_000_003 + 500_009 + 17 * stage)
    w_qkv = torch.randn(3 * hidden, hidden, generator=gw, device=device) / math.sqrt(hidden)
    w_qkv[:2 * hidden] *= QK_GAIN
    w_qkv = w_qkv.to(dt)
    w_o = (torch.randn(hidden, hidden, generator=gw, device=device) / math.sqrt(hidden)).to(dt)
    return x, w_qkv, w_o, h, pp, d ** -0.5, bool(size["causal"])


def roofline(world_size, size):
    pp, cp = _layout(world_size, size)
    b, s, h, d = size["batch"], size["s_local"], size["num_heads"], size["head_dim"]
    e = _BYTES[size["dtype"]]
    hidden = h * d
    act = b * s * hidden * e
    block = b * s * hidden * e  # one K (or V, or Q) block of all heads
    attn_blocks, kv_blocks = _ring_blocks(cp, size)
    return {
        # queries must meet the earlier K/V blocks (one block per earlier block at least,
        # (cp-1)/2 per rank when balanced), and a later stage receives its input activations
        "nvlink_bytes_per_rank": kv_blocks * block + (act if pp > 1 else 0),
        "flops_per_rank": (2.0 * b * s * hidden * 3 * hidden
                           + 4.0 * b * h * s * s * d * attn_blocks
                           + 2.0 * b * s * hidden * hidden),
        "hbm_bytes_per_rank": 2.0 * act + 4.0 * hidden * hidden * e,
    }
