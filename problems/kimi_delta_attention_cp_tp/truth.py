import torch
import torch.nn.functional as F


def _kda(q, k, v, g, beta, a_log, dt_bias, lower_bound):
    b, s, h, dk = q.shape
    decay = torch.exp(lower_bound * torch.sigmoid(a_log.exp().view(1, 1, h, 1) * (g + dt_bias.view(h, dk))))
    q = F.normalize(q, dim=-1) * dk ** -0.5
    k = F.normalize(k, dim=-1)
    beta = torch.sigmoid(beta)
    out = torch.zeros(b, s, h, v.shape[-1], dtype=torch.float64)
    for bi in range(b):
        for hi in range(h):
            S = torch.zeros(dk, v.shape[-1], dtype=torch.float64)
            for t in range(s):
                kt = k[bi, t, hi]
                S = decay[bi, t, hi].unsqueeze(1) * S
                S = S + beta[bi, t, hi] * torch.outer(kt, v[bi, t, hi] - kt @ S)
                out[bi, t, hi] = q[bi, t, hi] @ S
    return out


def expected(inputs, world_size):
    tp, lower_bound = inputs[0][7], inputs[0][8]
    cp = world_size // tp
    a_log, dt_bias = inputs[0][5].double(), inputs[0][6].double()
    s = inputs[0][0].shape[1]
    # the full-sequence output of each TP index t (its CP ranks t, t+tp, ...)
    per_tp = []
    for t in range(tp):
        members = [inputs[c * tp + t] for c in range(cp)]
        full = [torch.cat([m[n] for m in members], dim=1).double() for n in range(5)]
        per_tp.append(_kda(*full, a_log, dt_bias, lower_bound))
    total = sum(per_tp)
    dt = inputs[0][0].dtype
    return [total[:, (r // tp) * s:(r // tp + 1) * s].to(dt) for r in range(world_size)]
