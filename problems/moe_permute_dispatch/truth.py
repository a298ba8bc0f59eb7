import torch


def expected(inputs, world_size):
    e = inputs[0][2]
    local = e // world_size
    # (expert, token) pairs of every rank, straight from the one-hot masks
    routed = [(m.sum(1) > 0) for _, m, *_ in inputs]  # [E, tokens] per rank
    out = []
    for r in range(world_size):
        rows = []
        for i in range(local):
            ex = r * local + i
            for s in range(world_size):
                for t in torch.nonzero(routed[s][ex]).flatten().tolist():
                    rows.append(inputs[s][0][t])
        h = inputs[r][0].shape[1]
        permuted = torch.stack(rows) if rows else inputs[r][0].new_empty((0, h))
        mapping = torch.cat([torch.nonzero(routed[r][ex]).flatten() for ex in range(e)])
        out.append((permuted, routed[r].clone(), mapping))
    return out
