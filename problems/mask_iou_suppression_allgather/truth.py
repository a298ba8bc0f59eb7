import torch


def expected(inputs, world_size):
    _, _, counts, last, thr, reverse = inputs[0]
    masks = torch.cat([i[0] for i in inputs]).float()
    scores = torch.cat([i[1] for i in inputs]).float()
    n = masks.shape[0]
    binary = (masks > 0).flatten(1).double()
    drop = torch.zeros(n, dtype=torch.bool)
    for i in range(n):
        for j in range(i + 1, n):
            inter = float((binary[i] * binary[j]).sum())
            union = max(1.0, float(binary[i].sum() + binary[j].sum()) - inter)
            # the decision as an fp32 quotient against the fp32 threshold
            iou = torch.tensor(inter / union, dtype=torch.float32)
            if not bool(iou >= torch.tensor(thr, dtype=torch.float32)):
                continue
            li, lj = int(last[i]), int(last[j])
            first_later = li < lj if reverse else li > lj
            second_later = lj < li if reverse else lj > li
            if first_later and lj > -1:
                drop[i] = True
            if second_later and li > -1:
                drop[j] = True
    out = masks.clone()
    out[drop] = -10.0
    return [(out, scores, drop)] * world_size
