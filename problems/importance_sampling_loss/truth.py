import torch


def expected(inputs, world_size):
    per = []
    for hidden, weight, labels, old, adv, ignore in inputs:
        logits = hidden.double() @ weight.double().t()
        valid = labels != ignore
        lse = torch.logsumexp(logits, dim=-1)
        picked = logits.gather(1, labels.clamp(min=0)[:, None])[:, 0]
        logp = torch.where(valid, picked - lse, torch.zeros_like(lse))
        delta = torch.where(valid, logp - old.double(), torch.zeros_like(lse)).clamp(-20, 20)
        ratio = torch.exp(delta)
        pg = torch.where(valid, -ratio * adv.double(), torch.zeros_like(lse))
        per.append((valid, logp, delta, ratio, pg))
    n = max(1.0, float(sum(int(v.sum()) for v, *_ in per)))
    loss = sum(float(pg.sum()) for *_, pg in per) / n
    vr = torch.cat([r[v] for v, _, _, r, _ in per])
    k3 = sum(float((r - d - 1)[v].sum()) for v, _, d, r, _ in per) / n
    ent = sum(float((-lp)[v].sum()) for v, lp, *_ in per) / n
    metrics = torch.tensor([float(vr.sum()) / n, float(vr.min()), float(vr.max()), k3, ent],
                           dtype=torch.float32)
    return [(torch.tensor(loss, dtype=torch.float32), None, lp.float(), pg.float(), metrics)
            for _, lp, _, _, pg in per]
