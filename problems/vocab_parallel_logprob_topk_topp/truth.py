import torch


def expected(inputs, world_size):
    _, target, k, p = inputs[0]
    logits = torch.cat([i[0] for i in inputs], dim=-1).double()
    b, s, v = logits.shape
    flat = logits.reshape(b * s, v)
    out = torch.empty(b * s, dtype=torch.float64)
    for t in range(b * s):
        row = flat[t]
        vals, idx = row.sort(descending=True)
        kept = vals >= vals[k - 1]
        probs = torch.where(kept, vals, torch.tensor(float("-inf"), dtype=torch.float64)).softmax(0)
        above = torch.cumsum(probs, 0) - probs  # mass strictly above each entry
        kept &= above < p
        kept[0] = True
        kept_ids = idx[kept]
        tgt = int(target.reshape(-1)[t])
        assert tgt in kept_ids.tolist(), "target outside the filtered set"
        out[t] = row[tgt] - torch.logsumexp(row[kept_ids], 0)
    res = out.reshape(b, s).to(inputs[0][0].dtype)
    return [res] * world_size
