import torch


def _grads(dout, q, k, v, out, lse, scale, causal):  # full sequence, [B, S, H, d], fp64
    qh, kh, vh, doh, oh = (t.transpose(1, 2).double() for t in (q, k, v, dout, out))
    scores = qh @ kh.transpose(-1, -2) * scale
    if causal:
        n = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    p = torch.exp(scores - lse.double().unsqueeze(-1))
    ds = p * (doh @ vh.transpose(-1, -2) - (doh * oh).sum(-1, keepdim=True))
    return [t.transpose(1, 2) for t in (ds @ kh * scale, ds.transpose(-1, -2) @ qh * scale, p.transpose(-1, -2) @ doh)]


def expected(inputs, world_size):
    """inputs[r] = (dout, q, k, v, out, softmax_lse, softmax_scale, causal, dp_size)."""
    scale, causal, dp = inputs[0][6], inputs[0][7], inputs[0][8]
    cp = world_size // dp
    total = None
    for replica in range(dp):
        rs = inputs[replica * cp:(replica + 1) * cp]
        cat = lambda i, dim: torch.cat([r[i] for r in rs], dim=dim)  # noqa: E731
        g = _grads(cat(0, 1), cat(1, 1), cat(2, 1), cat(3, 1), cat(4, 1), cat(5, 2), scale, causal)
        total = g if total is None else [a + b for a, b in zip(total, g)]
    s = inputs[0][1].shape[1]
    dt = inputs[0][1].dtype
    return [tuple((t / dp)[:, (r % cp) * s:(r % cp + 1) * s].to(dt) for t in total) for r in range(world_size)]
