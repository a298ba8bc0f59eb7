"""Ground truth for `moe_dispatch`: every rank's output from all ranks' inputs, in one process."""

import torch

LOCAL_EXPERTS = 8


def layout(indices, rank):
    """(source rank, token, global expert) of each row `rank` receives, in dispatch order:
    by local expert, then source rank, then token."""
    rows = []
    for e in range(LOCAL_EXPERTS):
        g = rank * LOCAL_EXPERTS + e
        for src, idx in enumerate(indices):
            rows += [(src, t, g) for t in range(idx.shape[0]) if g in idx[t].tolist()]
    return rows


def expected(inputs, world_size):
    out = []
    for r in range(world_size):
        rows = layout([idx for _, idx in inputs], r)
        x = torch.stack([inputs[src][0][t] for src, t, _ in rows])
        counts = torch.tensor([sum(1 for *_, g in rows if g == r * LOCAL_EXPERTS + e)
                               for e in range(LOCAL_EXPERTS)])
        out.append((x, counts))
    return out
