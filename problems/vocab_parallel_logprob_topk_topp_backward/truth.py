import torch


def expected(inputs, world_size):
    _, target, grad_output, k, p, _ = inputs[0]
    logits = torch.cat([i[0] for i in inputs], dim=-1).double()
    b, s, v = logits.shape
    flat = logits.reshape(b * s, v)
    grad = torch.zeros(b * s, v, dtype=torch.float64)
    for t in range(b * s):
        row = flat[t]
        vals, idx = row.sort(descending=True)
        kept = vals >= vals[k - 1]
        probs = torch.where(kept, vals, torch.tensor(float("-inf"), dtype=torch.float64)).softmax(0)
        above = torch.cumsum(probs, 0) - probs  # mass strictly above each entry
        kept &= above < p
        kept[0] = True
        ids = idx[kept]
        tgt = int(target.reshape(-1)[t])
        assert tgt in ids.tolist(), "target outside the filtered set"
        pk = torch.softmax(row[ids], 0)
        g = float(grad_output.reshape(-1)[t])
        grad[t, ids] = -pk * g
        grad[t, tgt] += g
    grad = grad.reshape(b, s, v).to(inputs[0][0].dtype)
    return list(torch.split(grad, v // world_size, dim=-1))
