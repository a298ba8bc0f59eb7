import torch
import torch.nn.functional as F


def _grads(x, y, params):
    ps = [p.double().clone().requires_grad_(True) for p in params]
    out = F.linear(F.relu(F.linear(x.double(), ps[0], ps[1])), ps[2], ps[3])
    F.mse_loss(out, y.double()).backward()
    return [p.grad for p in ps]


def expected(inputs, world_size):
    r0 = inputs[0]
    params, m, v = r0[2:6], r0[6:10], r0[10:14]
    lr, b1, b2, eps, step = r0[14:19]
    per_rank = [_grads(i[0], i[1], params) for i in inputs]
    grads = [sum(g[j] for g in per_rank) / world_size for j in range(4)]
    new_p, new_m, new_v = [], [], []
    for p, g, mi, vi in zip(params, grads, m, v):
        mi = b1 * mi.double() + (1 - b1) * g
        vi = b2 * vi.double() + (1 - b2) * g * g
        new_p.append(p.double() - lr * (mi / (1 - b1 ** step)) / ((vi / (1 - b2 ** step)).sqrt() + eps))
        new_m.append(mi)
        new_v.append(vi)
    out = tuple(t.to(params[0].dtype) for t in new_p + new_m + new_v)
    return [out for _ in range(world_size)]
