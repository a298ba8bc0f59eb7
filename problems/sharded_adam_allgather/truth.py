import torch


def expected(inputs, world_size):
    news = []
    for g, p, m, v, lr, b1, b2, eps, step in inputs:
        g, p, m, v = g.double(), p.double(), m.double(), v.double()
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** step)) / ((v / (1 - b2 ** step)).sqrt() + eps)
        news.append((p, m, v))
    dt = inputs[0][0].dtype
    full = torch.cat([p for p, _, _ in news]).to(dt)
    return [(full, m.to(dt), v.to(dt)) for _, m, v in news]
