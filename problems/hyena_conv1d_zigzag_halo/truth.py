import torch
import torch.nn.functional as F


def expected(inputs, world_size):
    w = world_size
    weight = inputs[0][1].double()
    half = inputs[0][0].shape[-1] // 2
    chunks = [None] * (2 * w)
    for r, (x, _) in enumerate(inputs):
        chunks[r] = x[..., :half]
        chunks[2 * w - 1 - r] = x[..., half:]
    seq = torch.cat(chunks, dim=-1).double()
    k = weight.shape[-1]
    y = F.conv1d(F.pad(seq, (k - 1, 0)), weight, groups=seq.shape[1])
    out = []
    for r in range(w):
        a = y[..., r * half:(r + 1) * half]
        b = y[..., (2 * w - 1 - r) * half:(2 * w - r) * half]
        out.append(torch.cat([a, b], dim=-1).to(inputs[0][0].dtype))
    return out
