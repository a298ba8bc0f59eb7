"""Ground truth for `moe_combine`: every rank's output from all ranks' inputs, in one process."""

import torch

LOCAL_EXPERTS = 8


def layout(indices, rank):
    """(source rank, token, global expert) of each row expert rank `rank` holds, in dispatch order."""
    rows = []
    for e in range(LOCAL_EXPERTS):
        g = rank * LOCAL_EXPERTS + e
        for src, idx in enumerate(indices):
            rows += [(src, t, g) for t in range(idx.shape[0]) if g in idx[t].tolist()]
    return rows


def expected(inputs, world_size):
    indices = [i[1] for i in inputs]
    out = []
    for r in range(world_size):
        _, idx, weights = inputs[r]
        y = torch.zeros(idx.shape[0], inputs[r][0].shape[1], dtype=torch.float64)
        for dst in range(world_size):
            for row, (src, t, g) in zip(inputs[dst][0], layout(indices, dst)):
                if src == r:
                    j = idx[t].tolist().index(g)
                    y[t] += weights[t, j].double() * row.double()
        out.append(y.to(inputs[r][0].dtype))
    return out
