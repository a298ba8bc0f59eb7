import torch


def expected(inputs, world_size):
    full = torch.cat([x for x, *_ in inputs], dim=1)  # [b, S, 3*h*d]
    b, big_s, width = full.shape
    n, restore = inputs[0][2], inputs[0][3]
    p = width // 3 // world_size
    qkv = full.view(b, big_s, 3, width // 3)
    out = []
    for r in range(world_size):
        mine = qkv[:, :n, :, r * p:(r + 1) * p]  # [b, n, 3, p]
        out.append(mine.reshape(b, n, 3 * p) if restore else mine)
    return out
