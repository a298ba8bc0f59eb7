# pkb:include ../_shared/ring_attention/truth.py


def _round(t, dt):
    return t.to(dt).double()


def expected(inputs, world_size):
    """inputs[r] = (hidden_states, w_qkv, w_o, num_heads, tp_size, softmax_scale, causal)."""
    _, _, _, num_heads, tp, scale, causal = inputs[0]
    cp = world_size // tp
    # the full sequence (one copy per sequence block) and the full weights (one copy per TP rank)
    x = torch.cat([inputs[c * tp][0] for c in range(cp)], dim=1).double()
    for r in range(world_size):  # replicated pieces must agree
        assert torch.equal(inputs[r][0], inputs[(r // tp) * tp][0])
        assert torch.equal(inputs[r][1], inputs[r % tp][1]) and torch.equal(inputs[r][2], inputs[r % tp][2])
    dt = inputs[0][0].dtype
    b, n, hidden = x.shape
    out = torch.zeros(b, n, hidden, dtype=torch.float64)
    for t in range(tp):
        w_qkv, w_o = inputs[t][1].double(), inputs[t][2].double()
        heads = num_heads // tp
        d = w_qkv.shape[0] // (3 * heads)
        qkv = _round(x @ w_qkv.T, dt).view(b, n, 3, heads, d)  # q, k, v are dtype tensors
        ctx = _round(_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], scale, causal), dt)
        out += ctx.reshape(b, n, heads * d) @ w_o.T
    s = n // cp
    return [out[:, (r // tp) * s:(r // tp + 1) * s].to(dt) for r in range(world_size)]
