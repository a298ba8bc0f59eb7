import torch


def expected(inputs, world_size):
    masks = [m for m, _ in inputs]
    e = inputs[0][1]
    local = e // world_size
    # c[s, x]: pairs of rank s routed to expert x, counted one entry at a time
    c = torch.zeros(world_size, e, dtype=torch.int64)
    for s, m in enumerate(masks):
        ex, _, _ = torch.nonzero(m, as_tuple=True)
        c[s] += torch.bincount(ex, minlength=e)
    out = []
    for r in range(world_size):
        ins = torch.tensor([int(c[r, d * local:(d + 1) * local].sum()) for d in range(world_size)])
        per_local = c[:, r * local:(r + 1) * local].clone()
        out.append((ins, per_local.sum(1), per_local, per_local.sum(0)))
    return out
