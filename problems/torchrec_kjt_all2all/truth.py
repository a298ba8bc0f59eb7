import torch


def expected(inputs, world_size):
    """inputs[r] = (lengths, values, key_splits, batch_size) of rank r."""
    key_splits = inputs[0][2]
    num_features = sum(key_splits)
    # per source rank and global feature: (lengths of its samples, its ids)
    per = []
    for lengths, values, _, b in inputs:
        lens = lengths.view(num_features, b)
        ends = torch.cumsum(lengths, 0)
        feats = []
        for f in range(num_features):
            start = int(ends[f * b - 1]) if f else 0
            feats.append((lens[f], values[start:start + int(lens[f].sum())]))
        per.append(feats)
    outs = []
    for j in range(world_size):
        first = sum(key_splits[:j])
        ls, vs = [], []
        for f in range(first, first + key_splits[j]):
            for s in range(world_size):
                ls.append(per[s][f][0])
                vs.append(per[s][f][1])
        batches = torch.tensor([i[3] for i in inputs], dtype=torch.int64)
        outs.append({"lengths": torch.cat(ls), "values": torch.cat(vs),
                     "stride": batches.sum(), "stride_per_rank": batches})
    return outs
