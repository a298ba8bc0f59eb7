import torch


def expected(inputs, world_size):
    p = inputs[0][2]
    max_norm = inputs[0][1]
    total = sum((g.double().abs() ** p).sum() for grads, _, _ in inputs for g in grads) ** (1.0 / p)
    total_norm = total.float()
    out = []
    for grads, _, _ in inputs:
        if float(total_norm) > max_norm:
            coef = max_norm / total_norm.double()
            clipped = [(g.double() * coef).to(g.dtype) for g in grads]
        else:
            clipped = [g.clone() for g in grads]
        out.append((clipped, total_norm.clone()))
    return out
