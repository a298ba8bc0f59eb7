import torch


def expected(inputs, world_size):
    _, _, max_norm, p, ep_size = inputs[0]
    ep_all = [[(g.double() / ep_size).to(g.dtype) if ep_size > 1 else g for g in ep]
              for _, ep, *_ in inputs]
    non_ep = sum((g.double().abs() ** p).sum() for ne, *_ in inputs for g in ne)
    ep = sum((g.double().abs() ** p).sum() for grads in ep_all for g in grads)
    total_norm = ((non_ep + ep) ** (1.0 / p)).float()
    clip = float(total_norm) > max_norm
    coef = max_norm / total_norm.double()
    out = []
    for (ne, *_), ep_scaled in zip(inputs, ep_all):
        fix = (lambda g: (g.double() * coef).to(g.dtype)) if clip else (lambda g: g.clone())
        out.append(([fix(g) for g in ne], [fix(g) for g in ep_scaled], total_norm.clone()))
    return out
