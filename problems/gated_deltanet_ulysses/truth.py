import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    cat = lambda n, d: torch.cat([i[n] for i in inputs], dim=d).double()  # noqa: E731
    q, k, v, gate, beta = (cat(n, 1) for n in range(5))
    a_log, dt_bias = cat(5, 0), cat(6, 0)
    b, s, h, dk = q.shape
    q = F.normalize(q, dim=-1, eps=1e-6) * dk ** -0.5
    k = F.normalize(k, dim=-1, eps=1e-6)
    alpha = torch.exp(-a_log.exp() * F.softplus(gate + dt_bias))
    out = torch.zeros(b, s, h, v.shape[-1], dtype=torch.float64)
    for bi in range(b):
        for hi in range(h):
            S = torch.zeros(dk, v.shape[-1], dtype=torch.float64)
            for t in range(s):
                kt = k[bi, t, hi]
                S = alpha[bi, t, hi] * S
                S = S + beta[bi, t, hi] * torch.outer(kt, v[bi, t, hi] - kt @ S)
                out[bi, t, hi] = q[bi, t, hi] @ S
    out = out.to(inputs[0][0].dtype)
    return list(torch.split(out, s // world_size, dim=1))
